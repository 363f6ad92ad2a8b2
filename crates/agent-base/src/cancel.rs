//! Ctrl-C handling: the first Ctrl-C asks the current operation to stop
//! cleanly (generation ends, the partial answer is kept); a second one exits
//! at once with the conventional status 130.

use std::sync::atomic::{AtomicBool, Ordering};
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

/// Installs the process-wide Ctrl-C handler and returns the token it trips.
pub fn install_ctrl_c() -> CancelToken {
    let token = CancelToken::new();
    let handler_token = token.clone();
    // Installation only fails if a handler already exists; then the default
    // behaviour (exit) still applies, which is safe.
    let _ = ctrlc::set_handler(move || {
        if handler_token.is_cancelled() {
            eprintln!("\ninterrupted");
            std::process::exit(130);
        }
        handler_token.cancel();
    });
    token
}
