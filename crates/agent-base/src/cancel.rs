//! Ctrl-C handling: the first Ctrl-C asks the current operation to stop
//! cleanly (generation ends, the partial answer is kept); a second one exits
//! at once with the conventional status 130.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// A cheap, clonable flag checked by long-running work between steps.
#[derive(Clone, Default, Debug)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
    pub fn reset(&self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// How many programs the terminal is handed to right now (the user's
/// editor): their Ctrl-C is theirs.
static HANDED_OVER: AtomicUsize = AtomicUsize::new(0);

/// Runs `f`, a program the user works in on our terminal (their editor),
/// with the agent deaf to Ctrl-C meanwhile, as git is while its editor runs:
/// a Ctrl-C there must not stop the turn, nor a second one exit the agent.
pub fn ignoring_ctrl_c<R>(f: impl FnOnce() -> R) -> R {
    struct Listen;
    impl Drop for Listen {
        fn drop(&mut self) {
            HANDED_OVER.fetch_sub(1, Ordering::SeqCst);
        }
    }
    HANDED_OVER.fetch_add(1, Ordering::SeqCst);
    let _listen = Listen;
    f()
}

/// Installs the process-wide Ctrl-C handler and returns the token it trips.
pub fn install_ctrl_c() -> CancelToken {
    let token = CancelToken::new();
    let handler_token = token.clone();
    // Installation only fails if a handler already exists; then the default
    // behaviour (exit) still applies, which is safe.
    let _ = ctrlc::set_handler(move || {
        if HANDED_OVER.load(Ordering::SeqCst) > 0 {
            return;
        }
        if handler_token.is_cancelled() {
            #[allow(
                clippy::print_stderr,
                reason = "the second Ctrl-C ends the process: the user is told why, last"
            )]
            {
                eprintln!("\ninterrupted");
            }
            std::process::exit(130);
        }
        handler_token.cancel();
    });
    token
}
