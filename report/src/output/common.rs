//! What several formats print alike: shares, the name of what weights count, flamegraph titles.

use crate::configs::FlameConfig;
use crate::escape::printable;
use crate::profile::Profile;

/// `part` as a percentage of `total` (0 of nothing).
pub(super) fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}

/// What the weights of stack outputs count.
pub(super) fn count_name(p: &Profile, opts: &FlameConfig) -> &'static str {
    if p.main_section().is_some_and(|s| s.time_in_ns()) {
        "ns"
    } else if opts.event_counts {
        "events"
    } else {
        "samples"
    }
}

/// The title of flamegraphs.
pub(super) fn title(p: &Profile, opts: &FlameConfig) -> String {
    opts.title.clone().unwrap_or_else(|| {
        let event = printable(p.main_section().map_or("no samples", |s| s.name.as_str())).into_owned();
        match &opts.diff_base {
            Some(base) => format!("rperf: {event}, {} against {}", opts.input.display(), base.display()),
            None => format!("rperf: {event}"),
        }
    })
}
