//! The terminal for `rperf top`: keys one at a time, without echo, restored on drop.

use std::time::Duration;

/// The terminal in raw mode while this lives.
pub struct RawTerminal {
    saved: libc::termios,
}

impl RawTerminal {
    /// Raw mode on standard input; None when it is not a terminal.
    pub fn enter() -> Option<RawTerminal> {
        // SAFETY: tcgetattr fills the zeroed termios for fd 0, which this process owns; the
        // changed copy is only handed back to tcsetattr.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut saved) != 0 {
                return None;
            }
            let mut raw = saved;
            raw.c_lflag &= !(libc::ICANON | libc::ECHO);
            raw.c_cc[libc::VMIN] = 1;
            raw.c_cc[libc::VTIME] = 0;
            if libc::tcsetattr(0, libc::TCSANOW, &raw) != 0 {
                return None;
            }
            Some(RawTerminal { saved })
        }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter`.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.saved) };
    }
}

/// The width of the terminal on standard output, in columns; None when it is not a terminal.
pub fn width() -> Option<usize> {
    // SAFETY: a zeroed winsize is valid; TIOCGWINSZ fills it, and it lives across the call.
    let (ok, size) = unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        (libc::ioctl(1, libc::TIOCGWINSZ, &mut size) == 0, size)
    };
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// The next byte typed on standard input within `timeout`, if any.
pub fn read_key(timeout: Duration) -> Option<u8> {
    let mut p = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, for the duration of the call; a one-byte read into a local.
    unsafe {
        if libc::poll(&mut p, 1, timeout.as_millis().min(i32::MAX as u128) as i32) <= 0 {
            return None;
        }
        let mut b = 0u8;
        (libc::read(0, (&mut b as *mut u8).cast(), 1) == 1).then_some(b)
    }
}
