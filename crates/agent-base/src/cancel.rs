//! Ctrl-C handling: the first Ctrl-C asks the current operation to stop
//! cleanly (generation ends, the partial answer is kept); a second one exits
//! at once with the conventional status 130.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A cheap, clonable flag checked by long-running work between steps,
/// and the key that tripped it: what stopped work says stopped it (the
/// terminal UI's Esc is not Ctrl-C).
#[derive(Clone, Default, Debug)]
pub struct CancelToken(Arc<State>);

#[derive(Default, Debug)]
struct State {
    cancelled: AtomicBool,
    /// None: Ctrl-C, the default way to stop.
    by: Mutex<Option<&'static str>>,
}

/// What [`CancelToken::cancel`] is said to be.
const CTRL_C: &str = "Ctrl-C";

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    /// Ctrl-C (or a client's cancel) asks to stop.
    pub fn cancel(&self) {
        self.cancel_by(CTRL_C);
    }
    /// `key` (`Esc`, say) asks to stop.
    pub fn cancel_by(&self, key: &'static str) {
        *self.by() = Some(key);
        self.0.cancelled.store(true, Ordering::SeqCst);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }
    /// The key that asked to stop, for the words that say so.
    pub fn stopped_by(&self) -> &'static str {
        self.by().unwrap_or(CTRL_C)
    }
    pub fn reset(&self) {
        self.0.cancelled.store(false, Ordering::SeqCst);
        *self.by() = None;
    }
    fn by(&self) -> std::sync::MutexGuard<'_, Option<&'static str>> {
        self.0.by.lock().unwrap_or_else(|e| e.into_inner())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_says_which_key_asked_for_it_until_reset() {
        let token = CancelToken::new();
        let seen = token.clone();
        token.cancel_by("Esc");
        assert!(seen.is_cancelled());
        assert_eq!(seen.stopped_by(), "Esc");
        token.reset();
        assert!(!seen.is_cancelled());
        token.cancel();
        assert_eq!(seen.stopped_by(), "Ctrl-C");
    }
}
