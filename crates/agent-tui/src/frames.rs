//! Frame times for `scripts/bench tui`: with `AGENT_TUI_FRAME_TIMES=FILE`,
//! each frame's drawing time is kept and written there when the UI closes,
//! a line per frame: when it began (ms since the Unix epoch) and its ms.

use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Default)]
pub(crate) struct FrameTimes {
    path: Option<PathBuf>,
    frames: Vec<(f64, f64)>,
}

impl FrameTimes {
    pub(crate) fn from_env() -> Self {
        Self {
            path: std::env::var_os("AGENT_TUI_FRAME_TIMES").map(PathBuf::from),
            frames: Vec::new(),
        }
    }

    /// A frame begins (None when no one asked).
    pub(crate) fn start(&self) -> Option<(f64, Instant)> {
        self.path.as_ref()?;
        let epoch = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        Some((epoch.as_secs_f64() * 1000.0, Instant::now()))
    }

    pub(crate) fn end(&mut self, started: Option<(f64, Instant)>) {
        if let Some((at, began)) = started {
            self.frames
                .push((at, began.elapsed().as_secs_f64() * 1000.0));
        }
    }

    pub(crate) fn save(&self) {
        if let Some(path) = &self.path {
            let lines: String = self
                .frames
                .iter()
                .map(|(at, ms)| format!("{at:.3} {ms:.4}\n"))
                .collect();
            let _ = std::fs::write(path, lines);
        }
    }
}
