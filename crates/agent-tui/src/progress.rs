//! What the model is doing in the current step, for the status line: the
//! prompt's prefill (tokens done of total, and the time left at the rate
//! measured so far), then the decoding speed. Fed by `Ui::prefilling` (the
//! engine's `Event::Prefill`, after each batch) and `Ui::generating`.

use std::time::Instant;

use agent_base::tokens::thousands;

#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// When the step began: the prefill rate is measured from here.
    started: Option<Instant>,
    prefill: Option<Prefill>,
    /// When decoding began: the prefill's end, else the step's start.
    decoding_since: Option<Instant>,
    tokens_per_s: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Prefill {
    done: usize,
    total: usize,
    /// Tokens a second so far, and when that was measured.
    rate: f64,
    at: Instant,
}

impl Progress {
    pub(crate) fn step_start(&mut self, now: Instant) {
        *self = Self {
            started: Some(now),
            decoding_since: Some(now),
            ..Self::default()
        };
    }

    pub(crate) fn prefilled(&mut self, done: usize, total: usize, now: Instant) {
        let since = self.started.unwrap_or(now);
        let seconds = now.duration_since(since).as_secs_f64().max(1e-3);
        self.prefill = Some(Prefill {
            done,
            total,
            rate: done as f64 / seconds,
            at: now,
        });
        if done >= total {
            self.decoding_since = Some(now);
        }
    }

    /// `tokens` generated in this step so far.
    pub(crate) fn generated(&mut self, tokens: usize, now: Instant) {
        let Some(since) = self.decoding_since else {
            return;
        };
        let seconds = now.duration_since(since).as_secs_f64();
        if tokens > 0 && seconds > 0.0 {
            self.tokens_per_s = Some(tokens as f64 / seconds);
        }
    }

    /// `prefill 512/2,048 (ETA 3s)` while the prompt is read, then `18.5 tokens/s`.
    pub(crate) fn text(&self, now: Instant) -> Option<String> {
        if let Some(p) = self.prefill.filter(|p| p.done < p.total) {
            let mut text = format!("prefill {}/{}", thousands(p.done), thousands(p.total));
            if p.rate > 0.0 {
                // Counted down between reports, at the rate last measured.
                let left =
                    (p.total - p.done) as f64 / p.rate - now.duration_since(p.at).as_secs_f64();
                text.push_str(&format!(" (ETA {})", seconds_text(left.max(0.0))));
            }
            return Some(text);
        }
        self.tokens_per_s.map(|tps| format!("{tps:.1} tokens/s"))
    }
}

/// `7s`, `2m 05s`.
fn seconds_text(seconds: f64) -> String {
    let s = seconds.ceil() as u64;
    if s < 60 {
        format!("{s}s")
    } else {
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn prefill_shows_the_time_left_then_decoding_its_speed() {
        let t0 = Instant::now();
        let mut p = Progress::default();
        p.step_start(t0);
        assert_eq!(p.text(t0), None);
        p.prefilled(512, 2048, t0 + Duration::from_secs(1));
        assert_eq!(
            p.text(t0 + Duration::from_secs(1)).as_deref(),
            Some("prefill 512/2,048 (ETA 3s)")
        );
        assert_eq!(
            p.text(t0 + Duration::from_secs(2)).as_deref(),
            Some("prefill 512/2,048 (ETA 2s)")
        );
        let end = t0 + Duration::from_secs(4);
        p.prefilled(2048, 2048, end);
        p.generated(37, end + Duration::from_secs(2));
        assert_eq!(p.text(end).as_deref(), Some("18.5 tokens/s"));
        assert_eq!(seconds_text(125.0), "2m 05s");
    }
}
