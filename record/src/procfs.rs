//! Reading processes, threads and mappings from /proc, and turning them into the COMM, FORK and
//! MMAP2 records perf writes for processes that existed before the recording began.

use std::fs;

/// Threads of process `pid` (the process itself included), or empty if it is gone.
pub fn threads_of(pid: i32) -> Vec<i32> {
    let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// Every process id currently in /proc.
pub fn all_pids() -> Vec<i32> {
    let mut pids: Vec<i32> = fs::read_dir("/proc")
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    pids.sort_unstable();
    pids
}

/// The thread's command name (`/proc/PID/task/TID/comm`).
pub fn comm_of(pid: i32, tid: i32) -> Option<String> {
    fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The process's argv.
pub fn cmdline_of(pid: i32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The thread-group id of a thread (its process), from /proc/TID/status.
pub fn tgid_of(tid: i32) -> Option<i32> {
    let status = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// The effective uid of a process, while it exists.
pub fn uid_of(pid: i32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The owner of process `pid` as /proc shows it: its effective uid, or root's where it is not
/// dumpable (setuid programs). One stat, where `uid_of` has the kernel format the whole status
/// file: recording a busy machine, it is asked at the first sample of every process.
pub fn owner_of(pid: i32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(format!("/proc/{pid}")).ok().map(|m| m.uid())
}

/// True while `pid` (a process or thread id) runs: it exists and is not a zombie waiting to be
/// reaped (whose event fds the kernel has already hung up).
pub fn is_alive(pid: i32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some("Z") | Some("X") | None)
}

/// CPU time the threads of `pid` have used so far (the first field of each thread's
/// `/proc/PID/task/TID/schedstat`); None where the kernel keeps no scheduler statistics.
pub fn cpu_time(pid: i32) -> Option<std::time::Duration> {
    let mut ns = 0u64;
    for tid in threads_of(pid) {
        let line = fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
        ns += line.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(std::time::Duration::from_nanos(ns))
}

/// One line of /proc/PID/maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapLine {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// `rwxp` flags.
    pub perms: String,
    /// File offset.
    pub pgoff: u64,
    /// Device major.
    pub major: u32,
    /// Device minor.
    pub minor: u32,
    /// Inode.
    pub inode: u64,
    /// Path or pseudo-name (`[vdso]`, `[stack]`, ...), possibly empty.
    pub path: String,
}

impl MapLine {
    /// True for executable mappings.
    pub fn is_exec(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// Parses one /proc/PID/maps line.
pub fn parse_map_line(line: &str) -> Option<MapLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.to_string();
    let pgoff = u64::from_str_radix(it.next()?, 16).ok()?;
    let dev = it.next()?;
    let inode = it.next()?.parse().ok()?;
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-')?;
    let (maj, min) = dev.split_once(':')?;
    Some(MapLine {
        start: u64::from_str_radix(s, 16).ok()?,
        end: u64::from_str_radix(e, 16).ok()?,
        perms,
        pgoff,
        major: u32::from_str_radix(maj, 16).ok()?,
        minor: u32::from_str_radix(min, 16).ok()?,
        inode,
        path,
    })
}

/// The mappings of process `pid`.
pub fn maps_of(pid: i32) -> Vec<MapLine> {
    fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|s| s.lines().filter_map(parse_map_line).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_owner_is_its_effective_uid() {
        let me = std::process::id() as i32;
        assert_eq!(owner_of(me), uid_of(me));
        assert_eq!(owner_of(1), Some(0));
        assert_eq!(owner_of(i32::MAX), None);
    }

    #[test]
    fn map_lines() {
        let m = parse_map_line(
            "7f1c2a000000-7f1c2a1c5000 r-xp 00026000 fe:01 1049  /usr/lib/x86_64-linux-gnu/libc.so.6",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.pgoff, m.major, m.minor, m.inode),
            (0x7f1c2a000000, 0x7f1c2a1c5000, 0x26000, 0xfe, 1, 1049)
        );
        assert!(m.is_exec());
        assert_eq!(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        let v =
            parse_map_line("7ffd5b5f0000-7ffd5b5f2000 r-xp 00000000 00:00 0                          [vdso]")
                .unwrap();
        assert_eq!(v.path, "[vdso]");
    }

    #[test]
    fn own_process_is_visible() {
        let me = std::process::id() as i32;
        assert!(threads_of(me).contains(&me));
        assert!(maps_of(me).iter().any(|m| m.is_exec()));
        assert_eq!(tgid_of(me), Some(me));
    }
}
