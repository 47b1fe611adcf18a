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

/// True when process `pid` belongs to app `name`: its comm (which the kernel cuts to 15 bytes)
/// or the basename of its argv[0] is the name.
pub fn is_app_process(pid: i32, name: &str) -> bool {
    let comm = procfs::comm_of(pid, pid).unwrap_or_default();
    let short: String = name.chars().take(15).collect();
    if comm == name || (name.len() > 15 && comm == short) {
        return true;
    }
    procfs::cmdline_of(pid).first().is_some_and(|a| basename(a) == name || a == name)
}

/// The processes of app `name` running now.
pub fn app_processes(name: &str) -> Vec<i32> {
    let me = std::process::id() as i32;
    procfs::all_pids().into_iter().filter(|&p| p != me && is_app_process(p, name)).collect()
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
    fn regex_without_match_is_an_error() {
        let err = resolve_processes("no-such-process-name-xyz").unwrap_err().to_string();
        assert!(err.contains("no running process matches"), "{err}");
    }
}
