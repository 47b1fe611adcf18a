//! The outputs: each format renders a profile (and, for comparisons, a base profile) and
//! decides nothing about which samples count or how much they weigh.

mod aggregate;
mod call_tree;
mod common;
mod first_on_stack;
mod flame;
mod gecko;
mod html;
mod json;
mod pprof;
mod report_sample;
mod script;
mod text;

use std::io::{self, Write};

pub use text::{table, Table, TableRow};

use crate::options::{Format, ReportOptions};
use crate::profile::Profile;

/// Writes `p` in the format `opts` asks for; with `base`, a comparison against it.
pub fn write(
    out: &mut dyn Write,
    p: &Profile,
    opts: &ReportOptions,
    base: Option<&Profile>,
) -> io::Result<()> {
    // Each format gets its own part of the options.
    match (opts.format, base) {
        (Format::Text, None) => text::write(out, p, &opts.text_config()),
        (Format::Text, Some(b)) => text::write_diff(out, p, b, &opts.text_config()),
        (Format::Folded, None) => flame::write_folded(out, p, &opts.flame_config()),
        (Format::Folded, Some(b)) => flame::write_diff_folded(out, p, b, &opts.flame_config()),
        (Format::Svg, base) => {
            let opts = opts.flame_config();
            let title = common::title(p, &opts);
            let style = flame::SvgStyle {
                title: &title,
                count_name: common::count_name(p, &opts),
                inverted: opts.inverted,
                reverse: opts.reverse,
            };
            let lines = flame::main_lines(p, &opts);
            match base {
                Some(b) => flame::write_diff_svg(out, &flame::main_lines(b, &opts), &lines, &style),
                None => flame::write_svg(out, &lines, &style),
            }
        }
        (Format::Html, base) => html::write(out, p, &opts.html_config(), base),
        (Format::Pprof, None) => pprof::write(out, p),
        (Format::Gecko, None) => gecko::write(out, p, opts.remove_gaps),
        (Format::Json, None) => json::write(out, p),
        (Format::Script, None) => script::write(out, p),
        (Format::ReportSample, None) => report_sample::write(out, p),
        (f, Some(_)) => {
            Err(io::Error::other(format!("--diff compares in text, folded, svg or html output, not {f:?}")))
        }
    }
}
