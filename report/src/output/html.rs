//! The HTML report: one self-contained file (no network requests) with an interactive
//! flamegraph (zoom, search, reset), a sortable table of functions with self and total shares,
//! a thread selector and the callers and callees of a selected function. With a base profile
//! the flamegraph is differential: red where a stack grew, blue where it shrank.
//!
//! A timeline above the flamegraph shows samples over time per thread; selecting a range on it
//! (or `#time=START,END` in seconds in the URL) re-renders the flamegraph, the function table and
//! the callers and callees for that range.
//!
//! The page is `assets/report.html`; the profile is embedded as JSON:
//! `{title, unit, diff, threads: [[pid, tid, comm]], funcs: [[name, binary, kind]],
//!   stacks: [[thread, weight, [func, ...] root first, base weight, [[bucket, weight], ...]]],
//!   timeline: {start, span, buckets} | null}`: the recording's time cut into `buckets` equal
//! parts from `start` (ns, the recording's clock) over `span` ns, each stack's weight per part.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::flame::FoldStyle;
use crate::configs::{FlameConfig, HtmlConfig};
use crate::escape::escape_html as escape;
use crate::model::DsoKind;
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
    /// Which key each counted (thread, stack, off-CPU) of the profile went to.
    keys: HashMap<(crate::profile::Thread, u32, bool), (usize, Vec<usize>)>,
}

/// Parts of the timeline.
const BUCKETS: u64 = 200;

impl Tables {
    fn add(&mut self, p: &Profile, opts: &FlameConfig, base: bool) {
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
            if !base {
                self.keys.insert((c.thread, c.stack, c.off_cpu), (thread, frames.clone()));
            }
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
pub fn write(out: &mut dyn Write, p: &Profile, opts: &HtmlConfig, base: Option<&Profile>) -> io::Result<()> {
    let mut t = Tables::default();
    t.add(p, &opts.flame, false);
    if let Some(b) = base {
        t.add(b, &opts.flame, true);
    }
    let (timeline, by_bucket) =
        if base.is_none() { timeline(p, &opts.flame, &t) } else { (Value::Null, HashMap::new()) };
    let code_view = if base.is_none() { code(p, opts, &t) } else { Value::Null };
    let mut stacks: Vec<_> = t.stacks.into_iter().collect();
    stacks.sort();
    let stacks: Vec<Value> = stacks
        .into_iter()
        .map(|(key, (w, b))| {
            let parts: Vec<[u64; 2]> =
                by_bucket.get(&key).map(|m| m.iter().map(|(k, v)| [*k, *v]).collect()).unwrap_or_default();
            json!([key.0, w, key.1, b, parts])
        })
        .collect();
    let title = super::common::title(p, &opts.flame);
    let data = json!({
        "title": title,
        "unit": super::common::count_name(p, &opts.flame),
        "diff": base.is_some(),
        "threads": t.threads,
        "funcs": t.funcs,
        "stacks": stacks,
        "timeline": timeline,
        "code": code_view,
    });
    // Inside <script>, "</" could end the element early and "<!--" changes how the element
    // ends; `<` only occurs inside JSON strings, where \u003c says the same.
    let data = serde_json::to_string(&data).map_err(io::Error::other)?.replace('<', "\\u003c");
    let page =
        PAGE.replace("__TITLE__", &escape(&crate::escape::printable(&title))).replacen("__DATA__", &data, 1);
    out.write_all(page.as_bytes())
}

/// The code of the hottest functions (by their index in `funcs`): each instruction as
/// `[address, text, file:line, inlined function, source text]`, and the samples taken at each as
/// `[instruction, part of the timeline, weight]`, so that the page shows any time range.
fn code(p: &Profile, opts: &HtmlConfig, t: &Tables) -> Value {
    let Some(section) = p.main_section() else { return Value::Null };
    let names = &p.names;
    let mut out = serde_json::Map::new();
    let mut index: HashMap<u32, (usize, &crate::annotate::FunctionCode)> = HashMap::new();
    // The HTML report shows the code of its hottest functions.
    let hot = crate::annotate::hot_code(p, &opts.symfs, &opts.source_dirs, 20);
    for c in &hot {
        let key = (names.func_name(c.func), names.dso_of(c.func).display_name().to_string());
        if let Some(&i) = t.func_index.get(&key) {
            index.insert(c.func, (i, c));
        }
    }
    let times = section.rows.iter().map(|r| r.time).filter(|&t| t > 0);
    let start = times.clone().min().unwrap_or(0);
    let span = times.max().unwrap_or(0).saturating_sub(start).max(1) + 1;
    let by_period = FoldStyle::new(&opts.flame, section).by_period;
    let mut weights: HashMap<(u32, usize, u64), u64> = HashMap::new();
    for r in &section.rows {
        let Some(&leaf) = p.stacks[r.stack as usize].first() else { continue };
        let Some(&f) = p.symbols.funcs(leaf).last() else { continue };
        let Some((_, code)) = index.get(&f) else { continue };
        let v = p.symbols.vaddr_in_file(leaf);
        let i = code.lines.partition_point(|l| l.addr <= v);
        let Some(line) =
            i.checked_sub(1).filter(|&i| v < code.lines[i].addr.saturating_add(code.lines[i].len))
        else {
            continue;
        };
        let part = (u128::from(r.time.saturating_sub(start)) * u128::from(BUCKETS) / u128::from(span)) as u64;
        let w = weights.entry((f, line, part.min(BUCKETS - 1))).or_default();
        *w = w.saturating_add(if by_period { r.weight } else { 1 });
    }
    for (f, (i, c)) in &index {
        let lines: Vec<Value> = c
            .lines
            .iter()
            .map(|l| json!([format!("{:x}", l.addr), l.text, l.srcline, l.inlined, l.source]))
            .collect();
        let mut w: Vec<[u64; 3]> = weights
            .iter()
            .filter(|((g, _, _), _)| g == f)
            .map(|((_, l, b), v)| [*l as u64, *b, *v])
            .collect();
        w.sort_unstable();
        out.insert(i.to_string(), json!({"lines": lines, "w": w}));
    }
    Value::Object(out)
}

/// The timeline of the main section: its time range and each stack's weight per part of it.
#[allow(clippy::type_complexity)]
fn timeline(
    p: &Profile,
    opts: &FlameConfig,
    t: &Tables,
) -> (Value, HashMap<(usize, Vec<usize>), std::collections::BTreeMap<u64, u64>>) {
    let mut out: HashMap<(usize, Vec<usize>), std::collections::BTreeMap<u64, u64>> = HashMap::new();
    let Some(section) = p.main_section() else { return (Value::Null, out) };
    let times = section.rows.iter().map(|r| r.time).filter(|&t| t > 0);
    let (Some(start), Some(end)) = (times.clone().min(), times.max()) else { return (Value::Null, out) };
    let span = end.saturating_sub(start).max(1) + 1;
    let by_period = FoldStyle::new(opts, section).by_period;
    for r in &section.rows {
        let Some(key) = t.keys.get(&(r.thread, r.stack, r.off_cpu)) else { continue };
        let part = (u128::from(r.time.saturating_sub(start)) * u128::from(BUCKETS) / u128::from(span)) as u64;
        let w = out.entry(key.clone()).or_default().entry(part.min(BUCKETS - 1)).or_default();
        *w = w.saturating_add(if by_period { r.weight } else { 1 });
    }
    (json!({"start": start, "span": span, "buckets": BUCKETS}), out)
}
