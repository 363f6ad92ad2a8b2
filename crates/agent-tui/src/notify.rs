//! Telling a user who looked away that the chat needs them: a turn that
//! took a while has ended, or an approval waits. Only while the terminal
//! reports that it is not focused (focus reporting, `CSI ? 1004 h`), as
//! OSC 9 (a desktop notification in iTerm2, WezTerm, kitty, Ghostty,
//! Windows Terminal) or the bell: `AGENT_NOTIFY=osc9|bell|off`.

use std::time::Duration;

/// A turn shorter than this ends without a notification.
pub(crate) const LONG_TURN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Notify {
    Osc9,
    Bell,
    Off,
}

impl Notify {
    /// The user's choice (`AGENT_NOTIFY`); OSC 9 unless told otherwise.
    pub(crate) fn from_env() -> Self {
        match std::env::var("AGENT_NOTIFY").as_deref() {
            Ok("bell") => Notify::Bell,
            Ok("off") | Ok("0") | Ok("none") => Notify::Off,
            _ => Notify::Osc9,
        }
    }

    /// The bytes that say `message` to the terminal (none when off).
    pub(crate) fn sequence(self, message: &str) -> String {
        match self {
            Notify::Osc9 => {
                let text: String = message.chars().filter(|c| !c.is_control()).collect();
                format!("\x1b]9;{text}\x07")
            }
            Notify::Bell => "\x07".to_string(),
            Notify::Off => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc9_carries_the_message_without_control_characters() {
        assert_eq!(
            Notify::Osc9.sequence("agent: done\x07\x1b]0;x"),
            "\x1b]9;agent: done]0;x\x07"
        );
        assert_eq!(Notify::Bell.sequence("anything"), "\x07");
        assert_eq!(Notify::Off.sequence("anything"), "");
    }
}
