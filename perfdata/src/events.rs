//! Names of the generic events, by `perf_event_attr` type and config, as perf names them.

/// `PERF_TYPE_HARDWARE`.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`.
pub const TYPE_TRACEPOINT: u32 = 2;
/// `PERF_TYPE_RAW`.
pub const TYPE_RAW: u32 = 4;

/// Generic hardware events, by config.
pub const HARDWARE: [&str; 10] = [
    "cpu-cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "branch-instructions",
    "branch-misses",
    "bus-cycles",
    "stalled-cycles-frontend",
    "stalled-cycles-backend",
    "ref-cycles",
];

/// Software events, by config (9 is the dummy event that carries side-band records).
pub const SOFTWARE: [&str; 10] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "dummy",
];

/// A printable name for an event the file does not name.
pub fn name_of(type_: u32, config: u64) -> String {
    let pick = |names: &[&str], c: u64| names.get(usize::try_from(c).ok()?).map(|n| n.to_string());
    match type_ {
        TYPE_HARDWARE => pick(&HARDWARE, config),
        TYPE_SOFTWARE => pick(&SOFTWARE, config),
        TYPE_TRACEPOINT => Some(format!("tracepoint:{config}")),
        TYPE_RAW => Some(format!("r{config:x}")),
        _ => None,
    }
    .unwrap_or_else(|| format!("event(type {type_}, config {config:#x})"))
}

/// The name reports give an event, as simpleperf gives it: the generic name of a hardware or
/// software event (perf's `cycles` is `cpu-cycles`), else the name the file stores, else
/// `name_of`; then `:u` when the event left the kernel out, `:k` when it left user space out
/// (tracepoints keep their `system:name`).
pub fn report_name(
    type_: u32,
    config: u64,
    stored: Option<&str>,
    exclude_user: bool,
    exclude_kernel: bool,
) -> String {
    let generic = match type_ {
        TYPE_HARDWARE => HARDWARE.get(config as usize),
        TYPE_SOFTWARE => SOFTWARE.get(config as usize),
        _ => None,
    };
    let base = match (generic, stored) {
        (Some(g), _) => g.to_string(),
        (None, Some(s)) => s.to_string(),
        (None, None) => name_of(type_, config),
    };
    // Tracepoints are named `system:name`; a stored name may carry its modifier already.
    if type_ == TYPE_TRACEPOINT || (generic.is_none() && base.contains(':')) {
        return base;
    }
    match (exclude_user, exclude_kernel) {
        (false, true) => format!("{base}:u"),
        (true, false) => format!("{base}:k"),
        _ => base,
    }
}

/// True for the events whose counts are nanoseconds of CPU time.
pub fn counts_cpu_time(name: &str) -> bool {
    matches!(name, "cpu-clock" | "task-clock")
        || name.starts_with("cpu-clock:")
        || name.starts_with("task-clock:")
}

#[cfg(test)]
mod tests {
    #[test]
    fn names() {
        assert_eq!(super::name_of(1, 9), "dummy");
        assert_eq!(super::name_of(0, 3), "cache-misses");
        assert_eq!(super::name_of(0, 99), "event(type 0, config 0x63)");
        assert_eq!(super::name_of(4, 0x1a2), "r1a2");
    }

    #[test]
    fn report_names() {
        use super::report_name;
        assert_eq!(report_name(0, 0, Some("cycles"), false, false), "cpu-cycles");
        assert_eq!(report_name(0, 0, None, false, true), "cpu-cycles:u");
        assert_eq!(report_name(1, 0, Some("cpu-clock"), true, false), "cpu-clock:k");
        assert_eq!(report_name(2, 47, Some("sched:sched_switch"), false, false), "sched:sched_switch");
        assert_eq!(
            report_name(3, 0x10000, Some("L1-dcache-load-misses:u"), false, true),
            "L1-dcache-load-misses:u"
        );
    }
}
