//! Event names: parsing `-e` lists into kernel (type, config) pairs, and the catalogue that
//! `rperf list` prints.

use rperf_perfdata::events::{HARDWARE, SOFTWARE};

use crate::sys::attr_type;
use crate::Error;

/// One event as the user named it, resolved to what the kernel needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// The name as rperf prints it (without modifiers), e.g. `cpu-clock`, `sched:sched_switch`.
    pub name: String,
    /// `perf_event_attr.type`.
    pub type_: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `:u` — count only user space.
    pub exclude_kernel: bool,
    /// `:k` — count only the kernel.
    pub exclude_user: bool,
    /// The modifier text as given (`u`, `k`, ...), kept for the printed name.
    pub modifier: String,
}

impl EventSpec {
    /// The printed name with its modifier, e.g. `cpu-clock:u`.
    pub fn display_name(&self) -> String {
        if self.modifier.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, self.modifier)
        }
    }

    /// True for tracepoints, which sample every occurrence by default.
    pub fn is_tracepoint(&self) -> bool {
        self.type_ == attr_type::TRACEPOINT
    }

    /// True for events counted by the CPU's PMU (cycles, cache misses, raw events).
    pub fn is_hardware(&self) -> bool {
        matches!(self.type_, attr_type::HARDWARE | attr_type::HW_CACHE | attr_type::RAW)
    }
}

/// The kind of an event in the catalogue, for `rperf list` groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// CPU PMU generic events.
    Hardware,
    /// Kernel software counters.
    Software,
    /// Generic hardware cache events.
    Cache,
}

/// A named generic event.
#[derive(Clone, Copy, Debug)]
pub struct NamedEvent {
    /// Canonical name.
    pub name: &'static str,
    /// Group in `rperf list`.
    pub kind: EventKind,
    /// `perf_event_attr.type`.
    pub type_: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
}

const fn hw(name: &'static str, config: u64) -> NamedEvent {
    NamedEvent { name, kind: EventKind::Hardware, type_: attr_type::HARDWARE, config }
}
const fn sw(name: &'static str, config: u64) -> NamedEvent {
    NamedEvent { name, kind: EventKind::Software, type_: attr_type::SOFTWARE, config }
}

/// Hardware and software events by name (aliases included, canonical names first).
pub const NAMED_EVENTS: &[NamedEvent] = &[
    hw(HARDWARE[0], 0),
    hw(HARDWARE[1], 1),
    hw(HARDWARE[2], 2),
    hw(HARDWARE[3], 3),
    hw(HARDWARE[4], 4),
    hw(HARDWARE[5], 5),
    hw(HARDWARE[6], 6),
    hw(HARDWARE[7], 7),
    hw(HARDWARE[8], 8),
    hw(HARDWARE[9], 9),
    sw(SOFTWARE[0], 0),
    sw(SOFTWARE[1], 1),
    sw(SOFTWARE[2], 2),
    sw(SOFTWARE[3], 3),
    sw(SOFTWARE[4], 4),
    sw(SOFTWARE[5], 5),
    sw(SOFTWARE[6], 6),
    sw(SOFTWARE[7], 7),
    sw(SOFTWARE[8], 8),
];

const ALIASES: &[(&str, &str)] = &[
    ("cycles", "cpu-cycles"),
    ("branches", "branch-instructions"),
    ("idle-cycles-frontend", "stalled-cycles-frontend"),
    ("idle-cycles-backend", "stalled-cycles-backend"),
    ("faults", "page-faults"),
    ("cs", "context-switches"),
    ("migrations", "cpu-migrations"),
];

const CACHE_IDS: &[(&str, u64)] =
    &[("L1-dcache", 0), ("L1-icache", 1), ("LLC", 2), ("dTLB", 3), ("iTLB", 4), ("branch", 5), ("node", 6)];
const CACHE_OPS: &[(&str, &str, u64)] =
    &[("loads", "load-misses", 0), ("stores", "store-misses", 1), ("prefetches", "prefetch-misses", 2)];

/// Every generic hardware-cache event name with its config, e.g. `LLC-load-misses`.
pub fn cache_events() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for (cache, id) in CACHE_IDS {
        for (access, miss, op) in CACHE_OPS {
            out.push((format!("{cache}-{access}"), id | (op << 8)));
            out.push((format!("{cache}-{miss}"), id | (op << 8) | (1 << 16)));
        }
    }
    out
}

/// The tracefs mount point, if tracefs or debugfs is mounted (mounted first as root).
pub fn tracefs_root() -> Option<std::path::PathBuf> {
    find_tracefs().ok()
}

const TRACEFS_PLACES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Where tracefs is, mounting it at /sys/kernel/tracing when rperf runs as root and it is not
/// mounted (as perf does). Err says why it cannot be used and what to do.
pub fn find_tracefs() -> Result<std::path::PathBuf, (String, String)> {
    let found = || TRACEFS_PLACES.iter().map(std::path::PathBuf::from).find(|p| p.join("events").is_dir());
    if let Some(p) = found() {
        return Ok(p);
    }
    // Mounted, but closed to this user (mode 0700, as some systems mount it).
    for p in TRACEFS_PLACES.iter().map(std::path::Path::new) {
        if let Err(e) = std::fs::metadata(p.join("events")) {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                return Err((
                    format!("tracefs at {} is not readable by this user", p.display()),
                    format!("run as root, or open it up: `chmod -R a+rX {}` (as root)", p.display()),
                ));
            }
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let target = c"/sys/kernel/tracing";
        // SAFETY: the strings are NUL-terminated and live across the call; no data is passed.
        unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
        // Another rperf mounting it at the same time makes this mount fail (EBUSY): look again
        // either way.
        if let Some(p) = found() {
            return Ok(p);
        }
    }
    Err((
        "tracefs is not mounted, so tracepoints cannot be found".into(),
        "mount it with `mount -t tracefs nodev /sys/kernel/tracing` (as root)".into(),
    ))
}

/// Every tracepoint `system:name` found in tracefs, sorted.
pub fn tracepoints() -> Vec<String> {
    let Some(root) = tracefs_root() else { return Vec::new() };
    let mut out = Vec::new();
    let Ok(systems) = std::fs::read_dir(root.join("events")) else { return out };
    for sys in systems.flatten() {
        if !sys.path().is_dir() {
            continue;
        }
        let Ok(events) = std::fs::read_dir(sys.path()) else { continue };
        for ev in events.flatten() {
            if ev.path().join("id").exists() {
                out.push(format!(
                    "{}:{}",
                    sys.file_name().to_string_lossy(),
                    ev.file_name().to_string_lossy()
                ));
            }
        }
    }
    out.sort();
    out
}

/// Every tracepoint in tracefs with its id, by name.
pub fn tracepoint_ids() -> Vec<(String, u64)> {
    let Some(root) = tracefs_root() else { return Vec::new() };
    let id = |tp: &str| {
        let (system, name) = tp.split_once(':')?;
        std::fs::read_to_string(root.join("events").join(system).join(name).join("id"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    tracepoints().into_iter().filter_map(|tp| id(&tp).map(|id| (tp, id))).collect()
}

/// Every plain event name rperf accepts (for suggestions).
fn all_names() -> Vec<String> {
    let mut v: Vec<String> = NAMED_EVENTS.iter().map(|e| e.name.to_string()).collect();
    v.extend(ALIASES.iter().map(|(a, _)| a.to_string()));
    v.extend(cache_events().into_iter().map(|(n, _)| n));
    v
}

/// Parses one event name such as `cpu-clock`, `cache-misses:u`, `sched:sched_switch`, `r01c2`.
pub fn parse_event(text: &str) -> Result<EventSpec, Error> {
    let text = text.trim();
    // A tracepoint is `system:name`; a modifier follows the last colon when it is only u/k/p letters.
    let (body, modifier) = match text.rsplit_once(':') {
        Some((b, m)) if !m.is_empty() && m.chars().all(|c| matches!(c, 'u' | 'k' | 'p' | 'P')) => (b, m),
        // `cpu-clock:x`: a named event with a modifier rperf does not know, not a tracepoint.
        Some((b, m)) if !b.contains(':') && resolve(b, text).is_ok() => {
            return Err(Error::Event {
                name: text.to_string(),
                reason: format!("unknown modifier '{m}'"),
                remedy:
                    "modifiers are u (user space only), k (kernel only) and p (precise), e.g. cpu-clock:u"
                        .into(),
            });
        }
        _ => (text, ""),
    };
    let mut spec = resolve(body, text)?;
    spec.exclude_kernel = modifier.contains('u') && !modifier.contains('k');
    spec.exclude_user = modifier.contains('k') && !modifier.contains('u');
    spec.modifier = modifier.to_string();
    Ok(spec)
}

fn resolve(body: &str, full: &str) -> Result<EventSpec, Error> {
    let spec = |name: &str, type_, config| EventSpec {
        name: name.to_string(),
        type_,
        config,
        exclude_kernel: false,
        exclude_user: false,
        modifier: String::new(),
    };
    let canonical = ALIASES.iter().find(|(a, _)| *a == body).map_or(body, |(_, c)| c);
    if let Some(e) = NAMED_EVENTS.iter().find(|e| e.name == canonical) {
        return Ok(spec(e.name, e.type_, e.config));
    }
    if let Some((name, config)) = cache_events().into_iter().find(|(n, _)| n == body) {
        return Ok(spec(&name, attr_type::HW_CACHE, config));
    }
    if let Some(hex) = body.strip_prefix('r') {
        if !hex.is_empty() && hex.len() <= 16 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            let config = u64::from_str_radix(hex, 16).expect("checked hex digits");
            return Ok(spec(body, attr_type::RAW, config));
        }
    }
    if let Some((system, name)) = body.split_once(':') {
        let from_tracefs = tracepoint_from_tracefs(system, name, full);
        return match (from_tracefs, tracepoint_from_file(body)) {
            (Err(_), Some(id)) => Ok(spec(body, attr_type::TRACEPOINT, id?)),
            (found, _) => found.map(|id| spec(body, attr_type::TRACEPOINT, id)),
        };
    }
    Err(Error::Event {
        name: full.to_string(),
        reason: "unknown event".into(),
        remedy: suggest(body, &all_names()),
    })
}

/// The file of tracepoint ids `record --tracepoint-events` names, read where tracefs cannot
/// be (an app's own user on Android may not read it).
static TRACEPOINT_FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The most of a tracepoint-ids file read.
const TRACEPOINT_FILE_MAX: u64 = 16 << 20;

/// Takes tracepoint ids from `path` where tracefs cannot be read: lines of `system:name id`, as
/// `rperf list tracepoint --ids` prints them (and simpleperf's `--tracepoint-events` file
/// holds them). Set once, before events are parsed.
pub fn use_tracepoint_ids_from(path: std::path::PathBuf) {
    TRACEPOINT_FILE.set(path).ok();
}

/// The id of tracepoint `name` in the `--tracepoint-events` file, when one is given and names it
/// (an error when the file cannot be read).
fn tracepoint_from_file(name: &str) -> Option<Result<u64, Error>> {
    use std::io::Read;
    let path = TRACEPOINT_FILE.get()?;
    let mut text = String::new();
    let read = std::fs::File::open(path).and_then(|f| f.take(TRACEPOINT_FILE_MAX).read_to_string(&mut text));
    if let Err(e) = read {
        return Some(Err(Error::Event {
            name: name.to_string(),
            reason: format!("tracefs cannot be read here, nor --tracepoint-events {}: {e}", path.display()),
            remedy: "write the file where tracefs is readable: rperf list tracepoint --ids > FILE".into(),
        }));
    }
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next() == Some(name)).then(|| f.next().and_then(|id| id.parse().ok())).flatten().map(Ok)
    })
}

/// The id of tracepoint `system:name` in tracefs.
fn tracepoint_from_tracefs(system: &str, name: &str, full: &str) -> Result<u64, Error> {
    let event = |reason: String, remedy: String| Error::Event { name: full.to_string(), reason, remedy };
    let root = find_tracefs().map_err(|(reason, remedy)| event(reason, remedy))?;
    let id_path = root.join("events").join(system).join(name).join("id");
    match std::fs::read_to_string(&id_path) {
        Ok(id) => id.trim().parse::<u64>().map_err(|_| {
            event(format!("{} does not hold a tracepoint id", id_path.display()), "check tracefs".into())
        }),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(event(
            format!("cannot read {}: permission denied", id_path.display()),
            "run as root, or make tracefs readable (chmod -R a+rX /sys/kernel/tracing)".into(),
        )),
        Err(_) => {
            Err(event("no such tracepoint".into(), suggest(&format!("{system}:{name}"), &tracepoints())))
        }
    }
}

fn suggest(name: &str, candidates: &[String]) -> String {
    let mut scored: Vec<(usize, &String)> = candidates.iter().map(|c| (edit_distance(name, c), c)).collect();
    scored.sort();
    let close: Vec<&str> = scored
        .iter()
        .take_while(|(d, _)| *d <= 3.max(name.len() / 3))
        .take(3)
        .map(|(_, c)| c.as_str())
        .collect();
    if close.is_empty() {
        "run `rperf list` to see the events this machine supports".into()
    } else {
        format!("did you mean {}? Run `rperf list` to see every event", close.join(", "))
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parses a comma-separated event list (`-e a,b`); a tracepoint's colon is not a separator.
/// A list without any event is an error, not the default events.
pub fn parse_event_list(list: &str) -> Result<Vec<EventSpec>, Error> {
    let events: Vec<EventSpec> =
        list.split(',').filter(|s| !s.trim().is_empty()).map(parse_event).collect::<Result<_, _>>()?;
    if events.is_empty() {
        return Err(Error::Event {
            name: list.to_string(),
            reason: "names no event".into(),
            remedy: "give event names, e.g. -e cpu-clock (`rperf list` shows them), or leave out -e for the default".into(),
        });
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_modifiers() {
        let e = parse_event("cache-misses:u").unwrap();
        assert_eq!((e.type_, e.config, e.exclude_kernel, e.exclude_user), (0, 3, true, false));
        assert_eq!(e.display_name(), "cache-misses:u");
        assert_eq!(parse_event("cycles").unwrap().name, "cpu-cycles");
        let c = parse_event("LLC-load-misses").unwrap();
        assert_eq!((c.type_, c.config), (3, 2 | (1 << 16)));
        let r = parse_event("r01c2:k").unwrap();
        assert_eq!((r.type_, r.config, r.exclude_user), (4, 0x1c2, true));
    }

    #[test]
    fn bad_modifiers_and_empty_lists_are_errors() {
        let err = parse_event("cpu-clock:x").unwrap_err().to_string();
        assert!(err.contains("unknown modifier 'x'"), "{err}");
        assert!(parse_event_list("").is_err());
        assert!(parse_event_list(",,,").unwrap_err().to_string().contains("names no event"));
        assert_eq!(parse_event_list("cpu-clock,,task-clock").unwrap().len(), 2);
    }

    #[test]
    fn unknown_event_suggests() {
        let err = parse_event("cpu-clcok").unwrap_err().to_string();
        assert!(err.contains("cpu-clock"), "{err}");
        assert!(err.contains("rperf list"), "{err}");
    }
}
