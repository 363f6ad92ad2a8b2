//! Stopping a prefill inside its batch. The stream's `Flow::Stop` is read
//! between batches, and one batch of a 7B on a laptop CPU is 10 s; llama.cpp's
//! abort callback is polled between the nodes of the batch's graph (by the
//! CPU backend; GPU backends finish the batch).

use std::sync::{Arc, Mutex, PoisonError};

use agent_base::cancel::CancelToken;
use llama_cpp_2::context::AbortCallback;

/// What `llama_decode` returns when the abort callback stopped it; llama.cpp
/// has then removed the stopped batch's cells from the KV cache.
pub(crate) const ABORTED: i32 = 2;

/// The request's stop flag while the engine prefills, read by the context's
/// abort callback (installed once, for the context's life).
#[derive(Clone, Default)]
pub(crate) struct Interrupt(Arc<Mutex<Option<CancelToken>>>);

impl Interrupt {
    /// The callback for `LlamaContext::set_abort_callback`.
    pub(crate) fn callback(&self) -> AbortCallback {
        let slot = self.0.clone();
        Box::new(move || {
            let token = slot.lock().unwrap_or_else(PoisonError::into_inner);
            token.as_ref().is_some_and(CancelToken::is_cancelled)
        })
    }

    /// Lets `token` stop decodes until the guard drops. Only prefills are
    /// armed: a generation step is one token, and stopping between steps is
    /// soon enough.
    pub(crate) fn arm(&self, token: Option<&CancelToken>) -> Armed {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = token.cloned();
        Armed(self.clone())
    }
}

pub(crate) struct Armed(Interrupt);

impl Drop for Armed {
    fn drop(&mut self) {
        *self.0 .0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_stops_only_while_armed_with_a_tripped_token() {
        let interrupt = Interrupt::default();
        let should_abort = interrupt.callback();
        let token = CancelToken::new();
        assert!(!should_abort(), "unarmed");
        let armed = interrupt.arm(Some(&token));
        assert!(!should_abort(), "armed, not tripped");
        token.cancel();
        assert!(should_abort(), "armed and tripped");
        drop(armed);
        assert!(!should_abort(), "disarmed after the prefill");
        let _armed = interrupt.arm(None);
        assert!(!should_abort(), "a request without a token");
    }
}
