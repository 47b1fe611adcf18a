//! Progress on stderr while a long report reads its input, shown only when stderr is a terminal.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes of the input read so far, shared with the reader.
pub type ReadPosition = Arc<AtomicU64>;

/// A one-line progress display, redrawn at most every 200 ms.
pub struct Progress {
    total: u64,
    pos: ReadPosition,
    start: Instant,
    last: Instant,
    enabled: bool,
    shown: bool,
}

impl Progress {
    /// Progress over an input of `total` bytes; silent unless stderr is a terminal and the
    /// work takes more than half a second. `RPERF_PROGRESS=always` shows it from the start
    /// whatever stderr is (for logs and scripts), `RPERF_PROGRESS=never` hides it.
    pub fn new(total: u64, pos: ReadPosition) -> Progress {
        let setting = std::env::var("RPERF_PROGRESS").unwrap_or_default();
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let always = setting == "always";
        let enabled = always || (tty && setting != "never");
        let now = Instant::now();
        let start = if always { now - Duration::from_secs(1) } else { now };
        Progress { total, pos, start, last: start, enabled, shown: false }
    }

    /// Called often; redraws when it is time.
    pub fn tick(&mut self) {
        if !self.enabled || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        if !self.shown && self.start.elapsed() < Duration::from_millis(500) {
            return;
        }
        let done = self.pos.load(Ordering::Relaxed).min(self.total);
        let pct = if self.total > 0 { 100.0 * done as f64 / self.total as f64 } else { 100.0 };
        let width = 30;
        let filled = (pct / 100.0 * width as f64) as usize;
        eprint!(
            "\rrperf report: [{}{}] {pct:5.1}% of {:.1} MB read",
            "#".repeat(filled),
            " ".repeat(width - filled),
            self.total as f64 / 1e6
        );
        std::io::stderr().flush().ok();
        self.shown = true;
    }

    /// Says what happens next (e.g. symbolizing) on the progress line, after showing the
    /// reading as complete.
    pub fn stage(&mut self, what: &str) {
        if self.shown {
            self.last = self.start;
            self.pos.store(self.total, Ordering::Relaxed);
            self.tick();
            eprint!("\rrperf report: {what}\x1b[K");
            std::io::stderr().flush().ok();
        }
    }

    /// Clears the line.
    pub fn finish(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            std::io::stderr().flush().ok();
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
