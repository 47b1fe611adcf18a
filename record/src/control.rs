//! Commands from outside while recording, one per line, in one of two dialects:
//! - `--control fifo:CTL[,ACK]`, as perf's: `enable`, `disable`, `stop`, `ping` come in on one
//!   fifo, and each is answered `ack` on the other.
//! - `--stdio-controls-profiling`, as simpleperf's (what its app API, `ProfileSession`, drives):
//!   `started` is written to stdout once recording runs; `pause` and `resume` come in on stdin,
//!   each answered `ok` (or `error`) on stdout; the end of stdin stops the recording.
//!
//! The input is anyone's who can write to the fifo: lines are bounded (`CONTROL_LINE_MAX`; a
//! longer one is ignored and reported with its first bytes only), and at most
//! `CONTROL_READ_MAX` bytes are read per look, so that a flood neither grows memory nor holds
//! up the ring buffers.

use crate::Error;

/// The longest command line read; a longer line is ignored, said once per line.
pub const CONTROL_LINE_MAX: usize = 256;

/// The most bytes read per look.
const CONTROL_READ_MAX: usize = 1 << 20;

/// A line read from `--control`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlLine {
    /// A command, trimmed (never empty).
    Command(String),
    /// A line longer than `CONTROL_LINE_MAX`, with its first 32 bytes.
    TooLong(String),
}

/// Splits control input into lines as it comes, in pieces of any size: a line ends at `\n` or
/// NUL, and at most `CONTROL_LINE_MAX` bytes of one are ever held.
#[derive(Default, Debug)]
pub struct Lines {
    pending: Vec<u8>,
    /// The rest of a line too long to be a command is being passed over.
    skipping: bool,
}

impl Lines {
    /// The lines `bytes` completes.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<ControlLine> {
        let mut out = Vec::new();
        for &b in bytes {
            let end = b == b'\n' || b == 0;
            if self.skipping {
                self.skipping = !end;
            } else if end {
                let cmd = String::from_utf8_lossy(&self.pending).trim().to_string();
                if !cmd.is_empty() {
                    out.push(ControlLine::Command(cmd));
                }
                self.pending.clear();
            } else if self.pending.len() == CONTROL_LINE_MAX {
                out.push(ControlLine::TooLong(String::from_utf8_lossy(&self.pending[..32]).into_owned()));
                self.pending.clear();
                self.skipping = true;
            } else {
                self.pending.push(b);
            }
        }
        out
    }

    /// Bytes held of a line not yet ended.
    pub fn held(&self) -> usize {
        self.pending.len()
    }
}

/// Which commands a control input takes, and how they are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// perf's `--control`: enable, disable, stop, ping; each answered `ack`.
    Perf,
    /// simpleperf's `--stdio-controls-profiling`: pause, resume; each answered `ok` or `error`.
    Simpleperf,
}

/// The control input and where answers go, open.
pub(crate) struct Control {
    input: std::fs::File,
    answers: Option<std::fs::File>,
    lines: Lines,
    pub dialect: Dialect,
    /// The input ended (stdin closed): for simpleperf's dialect, a stop.
    pub ended: bool,
}

impl Control {
    /// perf's `--control fifo:CTL[,ACK]`.
    pub fn open(ctl: &std::path::Path, ack: Option<&std::path::Path>) -> Result<Control, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        // Opened for writing too, so that a writer closing it is no end of file, and without
        // blocking, so that the loop only looks.
        let open = |p: &std::path::Path| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(p)
                .map_err(|e| Error::file(p, e))
        };
        for p in std::iter::once(ctl).chain(ack) {
            use std::os::unix::fs::FileTypeExt;
            let is_fifo = std::fs::metadata(p).map(|m| m.file_type().is_fifo()).unwrap_or(false);
            if !is_fifo {
                return Err(Error::file(
                    p,
                    std::io::Error::other("--control needs a fifo here (mkfifo FILE)"),
                ));
            }
        }
        Ok(Control {
            input: open(ctl)?,
            answers: ack.map(open).transpose()?,
            lines: Lines::default(),
            dialect: Dialect::Perf,
            ended: false,
        })
    }

    /// simpleperf's `--stdio-controls-profiling`: commands on stdin, answers on stdout (copies
    /// of both descriptors, so that the streams themselves stay as they are).
    pub fn stdio() -> Result<Control, Error> {
        use std::os::fd::AsFd;
        let dup = |fd: std::os::fd::BorrowedFd<'_>, what: &str| {
            fd.try_clone_to_owned()
                .map(std::fs::File::from)
                .map_err(|e| Error::Usage(format!("--stdio-controls-profiling: cannot use {what}: {e}")))
        };
        Ok(Control {
            input: dup(std::io::stdin().as_fd(), "stdin")?,
            answers: Some(dup(std::io::stdout().as_fd(), "stdout")?),
            lines: Lines::default(),
            dialect: Dialect::Simpleperf,
            ended: false,
        })
    }

    /// The lines written since the last look (at most `CONTROL_READ_MAX` bytes of them); notes
    /// the end of the input.
    pub fn read(&mut self) -> Vec<ControlLine> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 4096];
        let mut out = Vec::new();
        let mut read = 0;
        // Looked at before each read: stdin is not made non-blocking, as others share it.
        let ready = |fd: i32| {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd, for the duration of the call.
            unsafe { libc::poll(&mut p, 1, 0) > 0 }
        };
        while read < CONTROL_READ_MAX && !self.ended && ready(self.input.as_raw_fd()) {
            let n = match self.input.read(&mut buf) {
                Ok(0) => {
                    self.ended = true;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            read += n;
            out.extend(self.lines.feed(&buf[..n]));
        }
        out
    }

    /// Answers a command: `ack` (perf), `ok` or `error` (simpleperf).
    pub fn answer(&mut self, done: bool) {
        let text: &[u8] = match (self.dialect, done) {
            (Dialect::Perf, _) => b"ack\n",
            (Dialect::Simpleperf, true) => b"ok\n",
            (Dialect::Simpleperf, false) => b"error\n",
        };
        self.say(text);
    }

    /// Says that recording runs (simpleperf's dialect: `started`).
    pub fn started(&mut self) {
        if self.dialect == Dialect::Simpleperf {
            self.say(b"started\n");
        }
    }

    fn say(&mut self, text: &[u8]) {
        if let Some(a) = &mut self.answers {
            std::io::Write::write_all(a, text).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_in_any_pieces_and_bounded() {
        let mut l = Lines::default();
        assert_eq!(l.feed(b"ena"), vec![]);
        assert_eq!(
            l.feed(b"ble\n\n  stop \0pi"),
            vec![ControlLine::Command("enable".into()), ControlLine::Command("stop".into())]
        );
        assert_eq!(l.feed(b"ng\n"), vec![ControlLine::Command("ping".into())]);
        let long = vec![b'x'; 10_000];
        let got = l.feed(&long);
        assert_eq!(got, vec![ControlLine::TooLong("x".repeat(32))]);
        assert_eq!(l.held(), 0, "the rest of a long line is not kept");
        assert_eq!(l.feed(b"still the long line\nstop\n"), vec![ControlLine::Command("stop".into())]);
    }
}
