//! Where rperf's messages go: stderr, or Android's log (`--log-to-android-buffer`, as
//! simpleperf's option: an app recording itself through the app API has no terminal, and its
//! developer reads `adb logcat -s rperf`), filtered by `--log LEVEL`.

use std::os::unix::net::UnixDatagram;
use std::sync::OnceLock;

/// A message's severity, in simpleperf's (and Android's) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Verbose = 2,
    Debug = 3,
    Info = 4,
    Warning = 5,
    Error = 6,
    Fatal = 7,
}

/// The levels `--log` takes, by simpleperf's names.
const LEVELS: [(&str, Level); 6] = [
    ("verbose", Level::Verbose),
    ("debug", Level::Debug),
    ("info", Level::Info),
    ("warning", Level::Warning),
    ("error", Level::Error),
    ("fatal", Level::Fatal),
];

/// Parses `--log LEVEL`.
pub fn parse_level(s: &str) -> Result<Level, String> {
    LEVELS.iter().find(|(name, _)| *name == s).map(|(_, l)| *l).ok_or_else(|| {
        let names: Vec<&str> = LEVELS.iter().map(|(n, _)| *n).collect();
        format!("unknown log level '{s}': use one of {}", names.join(", "))
    })
}

/// Android's log daemon's socket for writers.
const LOGD_SOCKET: &str = "/dev/socket/logdw";

/// The longest message logd takes (LOGGER_ENTRY_MAX_PAYLOAD less the header); longer ones are
/// cut.
const LOGD_MESSAGE_MAX: usize = 4000;

struct Sink {
    min: Level,
    /// Connected to logd, for `--log-to-android-buffer` where there is one.
    logd: Option<UnixDatagram>,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// Sets where messages go for the rest of the run: those under `min` are dropped; with
/// `android`, the rest go to Android's log where its socket is (`RPERF_LOGD_SOCKET` names
/// another), else to stderr, as without. Returns a note when the log could not be reached.
pub fn configure(min: Level, android: bool) -> Option<String> {
    let mut why = None;
    let logd = android
        .then(|| {
            let path = std::env::var_os("RPERF_LOGD_SOCKET").unwrap_or_else(|| LOGD_SOCKET.into());
            let sock = UnixDatagram::unbound().and_then(|s| s.connect(&path).map(|()| s));
            sock.map_err(|e| {
                why = Some(format!(
                    "--log-to-android-buffer: cannot reach Android's log at {}: {e}; messages go to stderr",
                    std::path::Path::new(&path).display()
                ))
            })
            .ok()
        })
        .flatten();
    SINK.set(Sink { min, logd }).ok();
    why
}

/// Says `text` at `level` (escaped for the terminal).
pub fn say(level: Level, text: &str) {
    let sink = SINK.get();
    if sink.is_some_and(|s| level < s.min) {
        return;
    }
    let text = rperf_symbols::text::printable(text);
    match sink.and_then(|s| s.logd.as_ref()) {
        Some(logd) => {
            logd.send(&logd_packet(level, "rperf", &text)).ok();
        }
        None => eprintln!("{text}"),
    }
}

/// One message as logd reads it: log id (main), thread id, the time on the real-time clock,
/// then the priority, the tag and the message, each string NUL-ended.
fn logd_packet(level: Level, tag: &str, text: &str) -> Vec<u8> {
    let now = rperf_record::sys::clock_ns(libc::CLOCK_REALTIME);
    let (sec, nsec) = ((now / 1_000_000_000) as u32, (now % 1_000_000_000) as u32);
    let tid = rperf_record::sys::gettid() as u16;
    let mut cut = text.len().min(LOGD_MESSAGE_MAX);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut p = Vec::with_capacity(12 + tag.len() + cut + 2);
    p.push(0u8);
    p.extend_from_slice(&tid.to_le_bytes());
    p.extend_from_slice(&sec.to_le_bytes());
    p.extend_from_slice(&nsec.to_le_bytes());
    p.push(level as u8);
    p.extend_from_slice(tag.as_bytes());
    p.push(0);
    p.extend_from_slice(&text.as_bytes()[..cut]);
    p.push(0);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logd_packet_is_header_priority_tag_and_message() {
        let p = logd_packet(Level::Warning, "rperf", "hello");
        assert_eq!(p[0], 0, "the main log");
        assert_eq!(p.len(), 11 + 1 + 6 + 6);
        assert_eq!(p[11], 5);
        assert_eq!(&p[12..], b"rperf\0hello\0");
        assert_eq!(parse_level("debug"), Ok(Level::Debug));
        assert!(parse_level("loud").unwrap_err().contains("verbose, debug"));
    }
}
