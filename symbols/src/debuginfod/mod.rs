//! A debuginfod client: debug info and binaries fetched by build id from the servers in
//! `DEBUGINFOD_URLS`, as elfutils' client fetches them (`/buildid/ID/debuginfo`,
//! `/buildid/ID/executable`), into the cache it shares with gdb and perf (`store`).
//!
//! Files are fetched side by side, each from the first server that has it. A server that
//! cannot be reached or does not answer in time is asked once and then left out for the rest
//! of the client's life: until a server has answered once, one request at a time goes to it.
//! A fetched file whose build id is not the one asked for is discarded. What happened is
//! summed up once (`take_summary`): what was fetched, what no server had, which server failed.
//!
//! The environment sets it as for elfutils: `DEBUGINFOD_URLS` (space-separated),
//! `DEBUGINFOD_TIMEOUT` (seconds to connect and to get each next byte, 90; a download slower
//! than 100 KiB/s over that long is given up, as elfutils gives it up),
//! `DEBUGINFOD_MAXTIME` (seconds for one download; 300 unless set, where elfutils has no
//! bound: a server trickling just above the low speed would hold a report for hours),
//! `DEBUGINFOD_MAXSIZE` (bytes of one file; 4 GiB unless set) and `DEBUGINFOD_CACHE_PATH`.

mod http;
mod store;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use store::{Lookup, Store};

/// What is fetched for a build id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Artifact {
    /// The separate debug file (DWARF and the full symbol table).
    Debuginfo,
    /// The binary itself.
    Executable,
}

impl Artifact {
    fn name(self) -> &'static str {
        match self {
            Artifact::Debuginfo => "debuginfo",
            Artifact::Executable => "executable",
        }
    }
}

/// A file to fetch.
#[derive(Clone, Debug)]
pub struct Want {
    /// The build id asked for.
    pub build_id: Vec<u8>,
    /// Which file of it.
    pub artifact: Artifact,
    /// The binary's recorded path, for messages.
    pub name: String,
}

/// A fetched file, in the cache and mapped.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// Its path in the cache (for messages; it was opened through the cache's descriptor).
    pub path: PathBuf,
    /// Its bytes.
    pub map: Arc<memmap2::Mmap>,
}

/// What the cache knows of a file.
pub enum Cached {
    /// Fetched before.
    Here(Fetched),
    /// No server had it a short while ago (or there is no cache to fetch into).
    NotOnServers,
    /// Not asked for yet.
    Unknown,
}

/// The servers and limits of a client.
#[derive(Clone, Debug)]
pub struct Config {
    /// Server URLs, asked in order.
    pub urls: Vec<String>,
    /// For connecting, for the answer's first byte and between reads.
    pub timeout: Duration,
    /// For one whole download.
    pub max_time: Duration,
    /// The largest file taken, in bytes.
    pub max_size: u64,
    /// The cache folder.
    pub cache: Option<PathBuf>,
}

/// The largest file taken unless `DEBUGINFOD_MAXSIZE` says otherwise.
const DEFAULT_MAX_SIZE: u64 = 4 << 30;

/// The longest one download may take unless `DEBUGINFOD_MAXTIME` says otherwise.
const DEFAULT_MAX_TIME: Duration = Duration::from_secs(300);

/// Requests in flight at once, at most.
const PARALLEL: usize = 8;

impl Config {
    /// The configuration the environment gives, with `urls` (space-separated) in place of
    /// `DEBUGINFOD_URLS` when given; None without any server.
    pub fn from_env(urls: Option<&str>) -> Option<Config> {
        Self::from_vars(urls, |k| std::env::var(k).ok())
    }

    /// `from_env`, with the environment's variables read through `var`.
    fn from_vars(urls: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Option<Config> {
        let from_env = var("DEBUGINFOD_URLS").unwrap_or_default();
        let urls: Vec<String> = urls
            .unwrap_or(&from_env)
            .split_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            return None;
        }
        let number = |k: &str| var(k).and_then(|v| v.trim().parse::<u64>().ok()).filter(|&n| n > 0);
        let path = |k: &str| var(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        Some(Config {
            urls,
            timeout: Duration::from_secs(number("DEBUGINFOD_TIMEOUT").unwrap_or(90)),
            max_time: number("DEBUGINFOD_MAXTIME").map_or(DEFAULT_MAX_TIME, Duration::from_secs),
            max_size: number("DEBUGINFOD_MAXSIZE").unwrap_or(DEFAULT_MAX_SIZE),
            cache: path("DEBUGINFOD_CACHE_PATH")
                .or_else(|| path("XDG_CACHE_HOME").map(|d| d.join("debuginfod_client")))
                .or_else(|| path("HOME").map(|d| d.join(".cache").join("debuginfod_client"))),
        })
    }
}

/// What is known of a server.
#[derive(Clone, Debug)]
enum Server {
    /// Not answered yet; a request is on its way when true.
    Untried(bool),
    /// Answered once.
    Answers,
    /// Could not be reached: why.
    Failed(String),
}

/// What happened, for the summary.
#[derive(Default)]
struct Tally {
    fetched: usize,
    bytes: u64,
    from_cache: usize,
    /// Recorded paths of binaries no server had (debug info or binary).
    missing: Vec<String>,
    /// One line per problem with a file.
    problems: Vec<String>,
}

/// A debuginfod client.
pub struct Client {
    config: Config,
    store: Result<Store, String>,
    /// Made on first need: a report whose files are all cached sets up no HTTP (or TLS).
    agent: std::sync::OnceLock<ureq::Agent>,
    limits: http::Limits,
    servers: Mutex<Vec<Server>>,
    answered: Condvar,
    tally: Mutex<Tally>,
    elapsed: Mutex<Duration>,
    progress: Progress,
}

impl Client {
    /// A client for `config`; its cache folder is checked now.
    pub fn new(config: Config) -> Client {
        let limits =
            http::Limits { timeout: config.timeout, max_time: config.max_time, max_size: config.max_size };
        Client {
            store: Store::open(config.cache.clone()),
            agent: std::sync::OnceLock::new(),
            limits,
            servers: Mutex::new(vec![Server::Untried(false); config.urls.len()]),
            answered: Condvar::new(),
            tally: Mutex::default(),
            elapsed: Mutex::default(),
            progress: Progress::new(),
            config,
        }
    }

    /// What the cache knows of `build_id`'s `artifact`, without asking any server.
    pub fn cached(&self, build_id: &[u8], artifact: Artifact) -> Cached {
        let Ok(store) = &self.store else { return Cached::NotOnServers };
        match store.lookup(&crate::buildid::hex(build_id), artifact.name()) {
            Lookup::Hit(path, map) => {
                self.tally().from_cache += 1;
                Cached::Here(Fetched { path, map })
            }
            Lookup::KnownMissing => Cached::NotOnServers,
            Lookup::Unknown => Cached::Unknown,
        }
    }

    /// Fetches the files `wanted` (a cached copy when there is one), side by side; each file
    /// found, by build id (hex) and kind.
    pub fn fetch_all(&self, wanted: &[Want]) -> HashMap<(String, Artifact), Fetched> {
        let Ok(store) = &self.store else { return HashMap::new() };
        let mut wanted: Vec<&Want> = wanted.iter().filter(|w| w.build_id.iter().any(|b| *b != 0)).collect();
        wanted.sort_by_key(|w| (crate::buildid::hex(&w.build_id), w.artifact.name()));
        wanted.dedup_by_key(|w| (crate::buildid::hex(&w.build_id), w.artifact));
        let started = Instant::now();
        // The cache first, side by side on rayon's threads: only what it lacks is fetched.
        let looked: Vec<Cached> = {
            use rayon::prelude::*;
            wanted.par_iter().map(|w| self.cached(&w.build_id, w.artifact)).collect()
        };
        let mut found = HashMap::new();
        let mut unknown = Vec::new();
        for (w, cached) in wanted.iter().zip(looked) {
            match cached {
                Cached::Here(f) => {
                    found.insert((crate::buildid::hex(&w.build_id), w.artifact), f);
                }
                Cached::NotOnServers => {}
                Cached::Unknown => unknown.push(*w),
            }
        }
        let wanted = unknown;
        let next = AtomicUsize::new(0);
        let found = Mutex::new(found);
        std::thread::scope(|s| {
            for _ in 0..wanted.len().min(PARALLEL) {
                s.spawn(|| {
                    while let Some(w) = wanted.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let hex = crate::buildid::hex(&w.build_id);
                        if let Some(f) = self.fetch_one(store, w, &hex) {
                            found.lock().unwrap_or_else(|e| e.into_inner()).insert((hex, w.artifact), f);
                        }
                        self.progress.done(wanted.len());
                    }
                });
            }
        });
        self.progress.clear();
        *self.elapsed.lock().unwrap_or_else(|e| e.into_inner()) += started.elapsed();
        found.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// One file the cache lacks, from the first server that has it.
    fn fetch_one(&self, store: &Store, w: &Want, hex: &str) -> Option<Fetched> {
        // Only a miss on every server is remembered: not a server that failed, nor a file
        // refused (another build id), which says nothing of whether the file exists.
        let mut all_answered = true;
        for (i, url) in self.config.urls.iter().enumerate() {
            if !self.take_turn(i) {
                all_answered = false;
                continue;
            }
            let full = format!("{url}/buildid/{hex}/{}", w.artifact.name());
            let agent = self.agent.get_or_init(|| http::agent(&self.limits));
            let outcome = match http::get(agent, &full, &self.limits, || store.create(hex, w.artifact.name()))
            {
                http::Outcome::Failed(why) => http::Outcome::Failed(format!(
                    "{why}, fetching the {} of {}",
                    w.artifact.name(),
                    crate::text::printable(&w.name)
                )),
                other => other,
            };
            self.answered_by(i, &outcome);
            match outcome {
                http::Outcome::Got(file, bytes) => {
                    if let Some(f) = self.keep(store, file, w, hex, url) {
                        let mut t = self.tally();
                        t.fetched += 1;
                        t.bytes += bytes;
                        return Some(f);
                    }
                    all_answered = false;
                }
                http::Outcome::NotThere => {}
                http::Outcome::TooBig(len) => self.tally().problems.push(format!(
                    "{url} has the {} of {} ({len} bytes or more), over the limit of {} bytes \
                     (DEBUGINFOD_MAXSIZE); not fetched",
                    w.artifact.name(),
                    crate::text::printable(&w.name),
                    self.limits.max_size
                )),
                http::Outcome::Failed(_) => all_answered = false,
                http::Outcome::NotKept(why) => {
                    self.tally().problems.push(format!(
                        "the {} of {} could not be written to the cache ({why})",
                        w.artifact.name(),
                        crate::text::printable(&w.name)
                    ));
                    return None;
                }
            }
        }
        if all_answered {
            store.mark_missing(hex, w.artifact.name());
            self.tally().missing.push(w.name.clone());
        }
        None
    }

    /// Checks a downloaded file's build id and gives it its name in the cache.
    fn keep(
        &self,
        store: &Store,
        mut file: crate::cache::NewFile,
        w: &Want,
        hex: &str,
        url: &str,
    ) -> Option<Fetched> {
        let have = file.map_written().ok().and_then(|m| crate::buildid::of_image(&m));
        match have {
            Some(have) if crate::buildid::same(&w.build_id, &have) => {}
            other => {
                let got = other.map_or("no build id (not an ELF file?)".to_string(), |h| {
                    format!("build id {}", crate::buildid::hex(&h))
                });
                self.tally().problems.push(format!(
                    "{url} sent a {} for {} with {got}, not the {hex} asked for; discarded",
                    w.artifact.name(),
                    crate::text::printable(&w.name),
                ));
                return None;
            }
        }
        file.set_mode(0o400).ok()?;
        file.finish().ok()?;
        let (path, map) = store.open_kept(hex, w.artifact.name())?;
        Some(Fetched { path, map })
    }

    /// Waits until server `i` may be asked: false when it failed. Until it has answered once,
    /// one request at a time goes to it.
    fn take_turn(&self, i: usize) -> bool {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &servers[i] {
                Server::Answers => return true,
                Server::Failed(_) => return false,
                Server::Untried(false) => {
                    servers[i] = Server::Untried(true);
                    return true;
                }
                Server::Untried(true) => {
                    servers = self.answered.wait(servers).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }

    /// Notes how server `i` answered.
    fn answered_by(&self, i: usize, outcome: &http::Outcome) {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers[i] = match outcome {
            http::Outcome::Failed(why) => Server::Failed(why.clone()),
            _ => Server::Answers,
        };
        self.answered.notify_all();
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What happened since the last call, one line each: the files fetched, what no server
    /// had, each server that failed, each file discarded; why the client could not be used.
    pub fn take_summary(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let store = match &self.store {
            Ok(store) => store,
            Err(why) => {
                lines.push(format!(
                    "debuginfod: not used: {why}; set DEBUGINFOD_CACHE_PATH to a folder only you can change"
                ));
                return lines;
            }
        };
        let t = std::mem::take(&mut *self.tally());
        let elapsed = std::mem::take(&mut *self.elapsed.lock().unwrap_or_else(|e| e.into_inner()));
        if t.fetched > 0 {
            lines.push(format!(
                "debuginfod: fetched {} file{} ({:.1} MB) in {:.2} s into {}{}",
                t.fetched,
                if t.fetched == 1 { "" } else { "s" },
                t.bytes as f64 / 1e6,
                elapsed.as_secs_f64(),
                crate::text::printable(&store.path().to_string_lossy()),
                if t.from_cache > 0 { format!("; {} more from there", t.from_cache) } else { String::new() }
            ));
        }
        if !t.missing.is_empty() {
            let mut names = t.missing.clone();
            names.sort();
            names.dedup();
            let shown: Vec<String> =
                names.iter().take(5).map(|n| crate::text::printable(n).into_owned()).collect();
            let more = names.len().saturating_sub(shown.len());
            lines.push(format!(
                "debuginfod: no server had {} file{} for {}{}",
                t.missing.len(),
                if t.missing.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            ));
        }
        lines.extend(t.problems.into_iter().map(|p| format!("debuginfod: {p}")));
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        for (url, state) in self.config.urls.iter().zip(servers.iter()) {
            if let Server::Failed(why) = state {
                lines.push(format!(
                    "debuginfod: {} failed: {why}; it was not asked again",
                    crate::text::printable(url)
                ));
            }
        }
        lines
    }
}

/// The progress line of a fetch, on stderr when it is a terminal (or `RPERF_PROGRESS=always`).
struct Progress {
    enabled: bool,
    done: AtomicU64,
}

impl Progress {
    fn new() -> Progress {
        let setting = std::env::var("RPERF_PROGRESS").unwrap_or_default();
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        Progress { enabled: setting == "always" || (tty && setting != "never"), done: AtomicU64::new(0) }
    }

    fn done(&self, of: usize) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.enabled {
            eprint!("\rrperf: debuginfod: {done} of {of} files looked up\x1b[K");
            std::io::stderr().flush().ok();
        }
    }

    fn clear(&self) {
        if self.enabled && self.done.swap(0, Ordering::Relaxed) > 0 {
            eprint!("\r\x1b[K");
            std::io::stderr().flush().ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(urls: Option<&str>, vars: &[(&str, &str)]) -> Option<Config> {
        Config::from_vars(urls, |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn the_environment_sets_servers_limits_and_cache_as_for_elfutils() {
        assert!(config(None, &[("HOME", "/h")]).is_none(), "no server, no client");
        assert!(config(None, &[("DEBUGINFOD_URLS", "  ")]).is_none());
        let c = config(None, &[("DEBUGINFOD_URLS", " http://a:8002/  https://b "), ("HOME", "/h")]).unwrap();
        assert_eq!(c.urls, ["http://a:8002", "https://b"]);
        assert_eq!(
            (c.timeout, c.max_time, c.max_size),
            (Duration::from_secs(90), DEFAULT_MAX_TIME, DEFAULT_MAX_SIZE)
        );
        assert_eq!(c.cache, Some(PathBuf::from("/h/.cache/debuginfod_client")));
        let c = config(
            Some("http://c"),
            &[
                ("DEBUGINFOD_URLS", "http://a"),
                ("DEBUGINFOD_TIMEOUT", "5"),
                ("DEBUGINFOD_MAXTIME", "60"),
                ("DEBUGINFOD_MAXSIZE", "1000"),
                ("XDG_CACHE_HOME", "/x"),
                ("HOME", "/h"),
            ],
        )
        .unwrap();
        assert_eq!(c.urls, ["http://c"], "--debuginfod=URLS replaces DEBUGINFOD_URLS");
        assert_eq!(
            (c.timeout, c.max_time, c.max_size),
            (Duration::from_secs(5), Duration::from_secs(60), 1000)
        );
        assert_eq!(c.cache, Some(PathBuf::from("/x/debuginfod_client")));
        let c = config(
            Some("http://c"),
            &[("DEBUGINFOD_CACHE_PATH", "/d"), ("XDG_CACHE_HOME", "/x"), ("DEBUGINFOD_TIMEOUT", "soon")],
        )
        .unwrap();
        assert_eq!(c.cache, Some(PathBuf::from("/d")));
        assert_eq!(c.timeout, Duration::from_secs(90), "an unreadable timeout keeps the default");
    }
}
