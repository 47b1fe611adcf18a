//! One request to a debuginfod server: `GET URL/buildid/ID/KIND`, its body streamed into a
//! cache file within the size limit.

use std::io::{Read, Write};
use std::time::Duration;

use crate::cache::NewFile;

/// How one request ended.
pub(super) enum Outcome {
    /// The server sent the file: written to this cache file, this many bytes.
    Got(NewFile, u64),
    /// The server answered without the file (404, or another status).
    NotThere,
    /// The file is larger than the limit (its announced or its received size).
    TooBig(u64),
    /// The server could not be reached or stopped answering: why.
    Failed(String),
    /// The file could not be written to the cache: why.
    NotKept(String),
}

/// The slowest a download may be, on average over each `Limits::timeout` (elfutils' rule).
pub(super) const LOW_SPEED: u64 = 100 << 10;

/// The limits of every request.
pub(super) struct Limits {
    /// For connecting, for the answer's first byte and between reads of the body; a download
    /// slower than `LOW_SPEED` over this long is given up.
    pub timeout: Duration,
    /// For a whole download.
    pub max_time: Duration,
    /// The largest file taken.
    pub max_size: u64,
}

/// An HTTP client with these limits.
pub(super) fn agent(limits: &Limits) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(limits.timeout))
        .timeout_recv_response(Some(limits.timeout))
        .timeout_per_read(Some(limits.timeout))
        .timeout_recv_body(Some(limits.max_time))
        .user_agent(concat!("rperf/", env!("CARGO_PKG_VERSION")))
        .build();
    config.new_agent()
}

/// Fetches `url` into the file `create` makes (only once the server has the file).
pub(super) fn get(
    agent: &ureq::Agent,
    url: &str,
    limits: &Limits,
    create: impl FnOnce() -> std::io::Result<NewFile>,
) -> Outcome {
    let response = match agent.get(url).call() {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(describe(&e)),
    };
    if response.status().as_u16() != 200 {
        return Outcome::NotThere;
    }
    let announced =
        response.headers().get("content-length").and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
    if let Some(len) = announced.filter(|&l| l > limits.max_size) {
        return Outcome::TooBig(len);
    }
    let mut file = match create() {
        Ok(f) => f,
        Err(e) => return Outcome::NotKept(e.to_string()),
    };
    let mut body = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let started = std::time::Instant::now();
    let mut pace = Pace::new(limits.timeout);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Outcome::Failed(format!("the download stopped after {total} bytes ({e})")),
        };
        total += n as u64;
        if let Some(why) = pace.too_slow(total) {
            return Outcome::Failed(why);
        }
        if started.elapsed() > limits.max_time {
            return Outcome::Failed(format!(
                "the download took over {} s (DEBUGINFOD_MAXTIME) and was given up after {total} bytes",
                limits.max_time.as_secs()
            ));
        }
        if total > limits.max_size {
            return Outcome::TooBig(total);
        }
        if let Err(e) = file.write_all(&buf[..n]) {
            return Outcome::NotKept(e.to_string());
        }
    }
    Outcome::Got(file, total)
}

/// Whether a download keeps up `LOW_SPEED`, judged over windows of the timeout's length.
struct Pace {
    window: Duration,
    since: std::time::Instant,
    at: u64,
}

impl Pace {
    fn new(window: Duration) -> Pace {
        Pace { window, since: std::time::Instant::now(), at: 0 }
    }

    /// Why the download is given up, when the window that just ended brought too little.
    fn too_slow(&mut self, total: u64) -> Option<String> {
        let spent = self.since.elapsed();
        if spent < self.window {
            return None;
        }
        let rate = (total - self.at) as f64 / spent.as_secs_f64();
        if rate < LOW_SPEED as f64 {
            return Some(format!(
                "the download ran at {:.1} KiB/s over {} s, below {} KiB/s (DEBUGINFOD_TIMEOUT), and was \
                 given up after {total} bytes",
                rate / 1024.0,
                spent.as_secs(),
                LOW_SPEED >> 10
            ));
        }
        (self.since, self.at) = (std::time::Instant::now(), total);
        None
    }
}

/// What went wrong with a request, in words.
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer in time (DEBUGINFOD_TIMEOUT)".to_string(),
        ureq::Error::ConnectionFailed => "connection refused".to_string(),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::TlsRequired => "this rperf was built without HTTPS (cargo feature https)".to_string(),
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                "no answer in time (DEBUGINFOD_TIMEOUT)".to_string()
            }
            _ => io.to_string(),
        },
        other => other.to_string(),
    }
}
