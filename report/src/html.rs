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

use crate::flame::FoldStyle;
use crate::model::DsoKind;
use crate::options::ReportOptions;
use crate::run::Profile;

const PAGE: &str = include_str!("../assets/report.html");

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
        let names = p.names();
        let Some(e) = p.main_event() else { return };
        let style = FoldStyle::new(opts, e.time_in_ns);
        let total = if style.by_period { e.agg.period } else { e.agg.samples };
        let min = (opts.percent_limit / 100.0 * total as f64).ceil() as u64;
        for (key, (period, samples)) in &e.agg.stacks {
            let weight = if style.by_period { *period } else { *samples };
            if weight == 0 || weight < min {
                continue;
            }
            let comm = names.comm(key.comm).to_string();
            let tkey = (key.pid, key.tid, comm);
            let next = self.threads.len();
            let thread = *self.thread_index.entry(tkey.clone()).or_insert_with(|| {
                self.threads.push(json!([tkey.0, tkey.1, tkey.2]));
                next
            });
            let frames: Vec<usize> = key
                .frames
                .iter()
                .rev()
                .map(|&f| {
                    let func = &p.resolver.funcs[f as usize];
                    let dso = &p.model.dsos[func.dso as usize];
                    let name = names.func_name(f);
                    let next = self.funcs.len();
                    *self.func_index.entry((name.clone(), dso.display_name().to_string())).or_insert_with(
                        || {
                            let kind = match dso.kind {
                                DsoKind::Kernel => "k",
                                DsoKind::Anon => "j",
                                _ if dso.display_name().starts_with("[JIT")
                                    || dso.path.starts_with("/tmp/perf-") =>
                                {
                                    "j"
                                }
                                _ => "u",
                            };
                            self.funcs.push(json!([name, dso.display_name(), kind]));
                            next
                        },
                    )
                })
                .collect();
            let w = self.stacks.entry((thread, frames)).or_default();
            if base {
                w.1 += weight;
            } else {
                w.0 += weight;
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
    let title = p.title(opts);
    let data = json!({
        "title": title,
        "unit": p.count_name(opts),
        "diff": base.is_some(),
        "threads": t.threads,
        "funcs": t.funcs,
        "stacks": stacks,
    });
    // Inside <script>, "</" could end the element early.
    let data = serde_json::to_string(&data).map_err(io::Error::other)?.replace("</", "<\\/");
    let page = PAGE.replace("__TITLE__", &escape(&title)).replacen("__DATA__", &data, 1);
    out.write_all(page.as_bytes())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
