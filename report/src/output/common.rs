//! What several formats print alike: the name of what weights count, flamegraph titles.

use crate::configs::FlameConfig;
use crate::escape::printable;
use crate::profile::Profile;

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
