//! The HTML report: one self-contained file (no network requests) with an interactive
//! flamegraph (zoom, search, reset), a sortable table of functions with self and total shares,
//! a thread selector and the callers and callees of a selected function. With a base profile
//! the flamegraph is differential: red where a stack grew, blue where it shrank.
//!
//! The page is `assets/report.html`; the profile is embedded as JSON:
//! `{title, unit, diff, threads: [[pid, tid, comm]], funcs: [[name, binary, kind]],
//!   stacks: [[thread, weight, [func, ...] root first, base weight]]}`.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::flame::FoldStyle;
use crate::model::DsoKind;
use crate::options::ReportOptions;
use crate::profile::Profile;

const PAGE: &str = include_str!("../../assets/report.html");

/// Functions and threads shared by the profile and its diff base.
#[derive(Default)]
struct Tables {
    funcs: Vec<Value>,
    func_index: HashMap<(String, String), usize>,
    threads: Vec<Value>,
    thread_index: HashMap<(i32, i32, String), usize>,
    /// (thread, frames root first) → (weight, base weight).
    stacks: HashMap<(usize, Vec<usize>), (u64, u64)>,
}

impl Tables {
    fn add(&mut self, p: &Profile, opts: &ReportOptions, base: bool) {
        let names = &p.names;
        let Some(section) = p.main_section() else { return };
        let style = FoldStyle::new(opts, section);
        let total = if style.by_period { section.weight } else { section.samples };
        let min = (opts.percent_limit / 100.0 * total as f64).ceil() as u64;
        for c in &section.stacks {
            let weight = if style.by_period { c.weight } else { c.samples };
            if weight == 0 || weight < min {
                continue;
            }
            let comm = names.comm(c.thread.comm).to_string();
            let tkey = (c.thread.pid, c.thread.tid, comm);
            let next = self.threads.len();
            let thread = *self.thread_index.entry(tkey.clone()).or_insert_with(|| {
                self.threads.push(json!([tkey.0, tkey.1, tkey.2]));
                next
            });
            let mut frames: Vec<usize> = p
                .frames(c.stack, c.off_cpu, true)
                .map(|f| {
                    let dso = names.dso_of(f);
                    let name = names.func_name(f);
                    let next = self.funcs.len();
                    *self.func_index.entry((name.clone(), dso.display_name().to_string())).or_insert_with(
                        || {
                            let kind = match dso.kind {
                                DsoKind::Kernel => "k",
                                k if k.is_jit() => "j",
                                _ => "u",
                            };
                            self.funcs.push(json!([name, dso.display_name(), kind]));
                            next
                        },
                    )
                })
                .collect();
            frames.reverse();
            let w = self.stacks.entry((thread, frames)).or_default();
            if base {
                w.1 = w.1.saturating_add(weight);
            } else {
                w.0 = w.0.saturating_add(weight);
            }
        }
    }
}

/// Writes the page.
pub fn write(
    out: &mut dyn Write,
    p: &Profile,
    opts: &ReportOptions,
    base: Option<&Profile>,
) -> io::Result<()> {
    let mut t = Tables::default();
    t.add(p, opts, false);
    if let Some(b) = base {
        t.add(b, opts, true);
    }
    let mut stacks: Vec<_> = t.stacks.into_iter().collect();
    stacks.sort();
    let stacks: Vec<Value> =
        stacks.into_iter().map(|((th, frames), (w, b))| json!([th, w, frames, b])).collect();
    let title = super::title(p, opts);
    let data = json!({
        "title": title,
        "unit": super::count_name(p, opts),
        "diff": base.is_some(),
        "threads": t.threads,
        "funcs": t.funcs,
        "stacks": stacks,
    });
    // Inside <script>, "</" could end the element early and "<!--" changes how the element
    // ends; `<` only occurs inside JSON strings, where \u003c says the same.
    let data = serde_json::to_string(&data).map_err(io::Error::other)?.replace('<', "\\u003c");
    let page = PAGE.replace("__TITLE__", &escape(&super::printable(&title))).replacen("__DATA__", &data, 1);
    out.write_all(page.as_bytes())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
