//! The terminal: raw mode, bracketed paste, focus reports and the keyboard
//! protocol on, an inline viewport at the bottom (no alternate screen: what
//! is finished goes into the terminal's own scrollback), and everything put
//! back on exit, panic included.
//!
//! - The viewport grows and shrinks with what it holds: `Screen::set_height`
//!   starts a new viewport where the old one began.
//! - A resize clears the live area and reopens it where it now begins (the
//!   cursor's row, asked of the terminal, less its row in the last frame: a
//!   terminal scrolls its rows when its height changes), not by ratatui's
//!   resize, which clears the whole screen when the width shrinks.
//! - `restore` is called from the normal path, the panic hook and the second
//!   Ctrl-C; the live area is cleared, so what the chat prints last (`session
//!   ... saved`) follows the scrollback.

use std::io::{Stdout, Write};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, EnableBracketedPaste, EnableFocusChange,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{disable_raw_mode, enable_raw_mode, Clear, ClearType};
use crossterm::{cursor, execute, queue};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use ratatui_crossterm::CrosstermBackend;

use crate::cells::wrap;

type Backend = CrosstermBackend<Stdout>;

/// Whether the keyboard protocol was pushed (popped again on restore).
static ENHANCED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) struct Screen {
    terminal: Terminal<Backend>,
    height: u16,
    /// The terminal's size when the viewport was made.
    size: (u16, u16),
    /// The cursor's row in the viewport at the last frame, if shown.
    cursor_row: Option<u16>,
}

/// Puts the terminal back as it was: cooked mode, no paste brackets, the
/// keyboard protocol popped, the cursor shown. Safe to call twice.
pub(crate) fn restore() {
    let mut out = std::io::stdout();
    if ENHANCED.swap(false, std::sync::atomic::Ordering::SeqCst) {
        let _ = queue!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(out, DisableFocusChange, DisableBracketedPaste, cursor::Show);
    let _ = disable_raw_mode();
}

/// Raw mode, bracketed paste, focus reports and, where the terminal has
/// it, the keyboard protocol.
fn modes_on() -> std::io::Result<()> {
    enable_raw_mode()?;
    let mut out = std::io::stdout();
    // Focus reports: a notification only when the user looked away.
    execute!(out, EnableBracketedPaste, EnableFocusChange)?;
    // Shift+Enter is only told apart from Enter under the keyboard protocol.
    if crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false) {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(())
}

impl Screen {
    /// Raw mode on, and an inline viewport of `height` rows under the cursor.
    pub(crate) fn open(height: u16) -> std::io::Result<Self> {
        modes_on()?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        let terminal = Self::inline(height)?;
        let mut screen = Self {
            terminal,
            height,
            size: (0, 0),
            cursor_row: None,
        };
        screen.size = screen.size();
        Ok(screen)
    }

    /// Hands the terminal over (to the user's editor): the live area
    /// cleared, the cursor at its start and shown, cooked mode.
    pub(crate) fn suspend(&mut self) {
        self.close();
    }

    /// Takes the terminal back after [`Screen::suspend`]: the modes on
    /// again and a new live area where the cursor is now.
    pub(crate) fn resume(&mut self) -> std::io::Result<()> {
        modes_on()?;
        self.terminal = Self::inline(self.height)?;
        self.size = self.size();
        self.cursor_row = None;
        Ok(())
    }

    fn inline(height: u16) -> std::io::Result<Terminal<Backend>> {
        Terminal::with_options(
            CrosstermBackend::new(std::io::stdout()),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )
    }

    /// The terminal's width and height.
    pub(crate) fn size(&self) -> (u16, u16) {
        let size = self.terminal.size().unwrap_or_default();
        (size.width, size.height)
    }

    /// Makes the live area `height` rows: the old one is cleared and a new
    /// viewport starts where it began (scrolling up if it must).
    pub(crate) fn set_height(&mut self, height: u16) -> std::io::Result<()> {
        let resized = self.size() != self.size;
        let height = height.clamp(1, self.size().1.max(1));
        if height == self.height && !resized {
            return Ok(());
        }
        self.reopen(height)
    }

    /// Clears the live area and opens a new viewport of `height` rows where
    /// it began (at the new size after a resize: ratatui's own resize would
    /// clear the whole screen when it narrows, the session with it).
    fn reopen(&mut self, height: u16) -> std::io::Result<()> {
        let mut top = self.terminal.get_frame().area().y;
        if self.size() != self.size {
            // A terminal scrolls its rows when it changes height (up to keep
            // the cursor in sight, down to fill from its scrollback): the
            // cursor moved with them, and the viewport's top is where it is now.
            if let Some(row) = self.cursor_row {
                top = cursor::position().map_or(top, |(_, y)| y.saturating_sub(row));
            }
            self.size = self.size();
        }
        let top = top.min(self.size.1.saturating_sub(1));
        execute!(
            std::io::stdout(),
            cursor::MoveTo(0, top),
            Clear(ClearType::FromCursorDown)
        )?;
        self.terminal = Self::inline(height)?;
        self.height = height;
        Ok(())
    }

    /// Puts `lines` into the scrollback above the live area, wrapped to the width.
    pub(crate) fn insert(&mut self, lines: &[Line<'static>]) -> std::io::Result<()> {
        if self.size() != self.size {
            self.reopen(self.height)?;
        }
        let (width, screen) = self.size();
        let rows: Vec<Line<'static>> = lines.iter().flat_map(|l| wrap(l, width)).collect();
        // In pieces of a screen at most: each is one buffer of cells.
        for chunk in rows.chunks(usize::from(screen.max(2) - 1)) {
            self.terminal.insert_before(chunk.len() as u16, |buf| {
                for (i, line) in chunk.iter().enumerate() {
                    let area = Rect::new(0, i as u16, buf.area.width, 1);
                    line.clone().render(area, buf);
                }
            })?;
        }
        Ok(())
    }

    /// Draws a frame; `render` says the cursor's row in the viewport, if it shows.
    pub(crate) fn draw(
        &mut self,
        render: impl FnOnce(&mut ratatui::Frame) -> Option<u16>,
    ) -> std::io::Result<()> {
        let mut row = None;
        self.terminal.draw(|frame| row = render(frame))?;
        self.cursor_row = row;
        Ok(())
    }

    /// Clears the live area and leaves the cursor at its start, for what
    /// is printed after the UI.
    pub(crate) fn close(&mut self) {
        let top = self.terminal.get_frame().area().y;
        let _ = execute!(
            std::io::stdout(),
            cursor::MoveTo(0, top),
            Clear(ClearType::FromCursorDown)
        );
        let _ = std::io::stdout().flush();
        restore();
    }
}
