//! What to profile: a command, processes, threads, the whole system, or an app by name.

use regex::Regex;

use crate::procfs;
use crate::Error;

/// A profiling target as the user asked for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Launch this command (argv) and profile it from its exec.
    Command(Vec<String>),
    /// These processes, with all their threads.
    Processes(Vec<i32>),
    /// These threads only.
    Threads(Vec<i32>),
    /// Every process on the selected CPUs.
    SystemWide,
    /// Every process whose comm or argv[0] basename is this name, now or later.
    App(String),
}

/// Resolves a `-p` list: pids, or regular expressions matched against process names.
pub fn resolve_processes(list: &str) -> Result<Vec<i32>, Error> {
    let mut pids = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if let Ok(pid) = item.parse::<i32>() {
            if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(Error::NoTarget(format!(
                    "no process with pid {item}; check the pid with `ps -p {item}`"
                )));
            }
            pids.push(pid);
            continue;
        }
        let re = Regex::new(&format!("^(?:{item})$")).map_err(|e| {
            Error::Usage(format!("-p '{item}' is neither a pid nor a valid process-name regex: {e}"))
        })?;
        let me = std::process::id() as i32;
        let found: Vec<i32> =
            procfs::all_pids().into_iter().filter(|&p| p != me && name_matches(p, &re)).collect();
        if found.is_empty() {
            return Err(Error::NoTarget(format!(
                "no running process matches '{item}'; list processes with `ps -e`"
            )));
        }
        pids.extend(found);
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(pids)
}

/// Checks a `-t` list: every thread must exist.
pub fn resolve_threads(list: &str) -> Result<Vec<i32>, Error> {
    let mut tids = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let tid: i32 = item.parse().map_err(|_| Error::Usage(format!("-t '{item}' is not a thread id")))?;
        if tid <= 0 || procfs::tgid_of(tid).is_none() {
            return Err(Error::NoTarget(format!("no thread with tid {item}; list threads with `ps -eLf`")));
        }
        tids.push(tid);
    }
    Ok(tids)
}

fn name_matches(pid: i32, re: &Regex) -> bool {
    let comm = procfs::comm_of(pid, pid).unwrap_or_default();
    if re.is_match(&comm) {
        return true;
    }
    procfs::cmdline_of(pid).first().is_some_and(|a| re.is_match(basename(a)))
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// True when process `pid` belongs to app `name`, as Android names an app's processes and as
/// simpleperf finds them: the file name of the first argument of its command line is the
/// package name, or the package name, `:` and a process name (`com.example:remote`), so a
/// program started as `./build/NAME` is found too. The kernel's process name is never used: it
/// keeps 15 bytes, so two apps whose names start alike would share it.
pub fn is_app_process(pid: i32, name: &str) -> bool {
    procfs::cmdline_of(pid).first().is_some_and(|a| names_app(a, name))
}

/// Whether a process whose first argument is `arg0` belongs to app `name`.
fn names_app(arg0: &str, name: &str) -> bool {
    let arg0 = basename(arg0);
    arg0 == name || arg0.strip_prefix(name).is_some_and(|rest| rest.starts_with(':'))
}

/// The processes of app `name` running now.
pub fn app_processes(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    procfs::all_pids().into_iter().filter(|&p| p != me && is_app_process(p, name)).collect()
}

/// Finds the processes of an app as they start, cheaply enough to look every millisecond (as
/// simpleperf does). /proc/loadavg names the last process created: /proc is listed only when
/// it changed, and a process's command line is read when it is new, and again while it is
/// young (first seen under two seconds ago: a process execs, or Android names it after the app,
/// soon after it is forked); every second, all of them are read again.
pub struct AppWatcher {
    name: String,
    /// Processes seen, with when they were first seen (None: running before the first scan).
    seen: std::collections::HashMap<i32, Option<std::time::Instant>>,
    found: std::collections::HashSet<i32>,
    last_full: Option<std::time::Instant>,
    last_pid: Vec<u8>,
    /// /proc/loadavg, kept open: one read a look.
    loadavg: Option<std::fs::File>,
}

impl AppWatcher {
    /// A watcher for app `name`.
    pub fn new(name: &str) -> AppWatcher {
        AppWatcher {
            name: name.to_string(),
            seen: Default::default(),
            found: Default::default(),
            last_full: None,
            last_pid: Vec::new(),
            loadavg: std::fs::File::open("/proc/loadavg").ok(),
        }
    }

    /// Waits until a process of the app runs, looking every millisecond (`waiting` is called
    /// once when none runs yet); false when `stopped` says to give up first.
    pub fn wait(&mut self, stopped: impl Fn() -> bool, waiting: impl FnOnce()) -> bool {
        if !self.scan().is_empty() {
            return true;
        }
        waiting();
        while !stopped() {
            if !self.scan().is_empty() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        false
    }

    /// Processes of the app that earlier scans did not return.
    pub fn scan(&mut self) -> Vec<i32> {
        use std::time::{Duration, Instant};
        let now = Instant::now();
        let mut buf = [0u8; 128];
        let n = self.loadavg.as_ref().and_then(|f| std::os::unix::fs::FileExt::read_at(f, &mut buf, 0).ok());
        let last_pid = buf[..n.unwrap_or(0)].split(|c| *c == b' ').nth(4).unwrap_or_default().to_vec();
        let full = self.last_full.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
        let young =
            |first: Option<Instant>| first.is_some_and(|f| now.duration_since(f) < Duration::from_secs(2));
        let first_scan = self.last_full.is_none();
        let pids: Vec<i32> = if full || last_pid != self.last_pid || last_pid.is_empty() {
            if full {
                self.last_full = Some(now);
            }
            self.last_pid = last_pid;
            let pids = procfs::all_pids();
            let live: std::collections::HashSet<i32> = pids.iter().copied().collect();
            self.seen.retain(|p, _| live.contains(p));
            self.found.retain(|p| live.contains(p));
            pids
        } else {
            // Nothing new: only young processes may have become the app.
            self.seen.iter().filter(|(_, &t)| young(t)).map(|(&p, _)| p).collect()
        };
        let me = std::process::id() as i32;
        let mut out = Vec::new();
        for pid in pids {
            if pid == me || self.found.contains(&pid) {
                continue;
            }
            let new = !self.seen.contains_key(&pid);
            let first = *self.seen.entry(pid).or_insert(if first_scan { None } else { Some(now) });
            if (new || young(first) || full) && is_app_process(pid, &self.name) {
                self.found.insert(pid);
                out.push(pid);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pid_resolves() {
        let me = std::process::id();
        assert_eq!(resolve_processes(&me.to_string()).unwrap(), vec![me as i32]);
        assert!(resolve_processes("999999999").is_err());
        assert!(resolve_threads("abc").is_err());
    }

    #[test]
    fn app_processes_are_named_by_their_first_argument() {
        assert!(names_app("com.example.myapp", "com.example.myapp"));
        assert!(names_app("com.example.myapp:remote", "com.example.myapp"));
        assert!(!names_app("com.example.myanotherapp", "com.example.myapp"));
        assert!(!names_app("com.example.myapp2", "com.example.myapp"));
        assert!(names_app("./build/com.example.myapp", "com.example.myapp"));
        assert!(names_app("/data/local/tmp/com.example.myapp:remote", "com.example.myapp"));
        assert!(!names_app("/data/com.example.myapp/other", "com.example.myapp"));
    }

    #[test]
    fn regex_without_match_is_an_error() {
        let err = resolve_processes("no-such-process-name-xyz").unwrap_err().to_string();
        assert!(err.contains("no running process matches"), "{err}");
    }
}
