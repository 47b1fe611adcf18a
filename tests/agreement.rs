//! Every output tells the same truth: for each kind of recording (cpu-clock with frame
//! pointers, DWARF, several events, tracepoints only, off-CPU, JIT) and under the same filters
//! and modes, the total weight and each function's inclusive share agree between text,
//! folded, svg, html, pprof (read by `go tool pprof`), gecko and json.
//!
//! json is the reference: one line per sample, so each other format is compared with the rows
//! it shows (the first event with samples for text, svg, html, pprof and gecko; every event
//! for folded).

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Inclusive weight per function name, and the total weight.
#[derive(Clone, Debug, Default)]
struct Shares {
    total: f64,
    by_func: BTreeMap<String, f64>,
}

impl Shares {
    /// Adds one stack (any order) with its weight; a function counts once per stack.
    fn add(&mut self, frames: impl IntoIterator<Item = String>, weight: f64) {
        self.total += weight;
        let mut seen = HashSet::new();
        for f in frames {
            if seen.insert(f.clone()) {
                *self.by_func.entry(f).or_default() += weight;
            }
        }
    }

    fn pct(&self, f: &str) -> f64 {
        100.0 * self.by_func.get(f).copied().unwrap_or(0.0) / self.total.max(1.0)
    }
}

/// A name outputs may write differently: `[unknown] (dso)` in stack outputs and `[unknown]`
/// in text and pprof; the off-CPU marker is a frame only in stack outputs.
fn comparable(name: &str) -> bool {
    !name.starts_with("[unknown]") && name != "[off-cpu]"
}

/// Every format, with functions named in full (C++ overloads are entries of their own in the
/// text report, and their shares are compared by name) and ART's frames hidden, as stack
/// outputs hide them by default.
fn report(data: &Path, args: &[&str], extra: &[&str]) -> std::process::Output {
    let o = run(rperf()
        .args(["report", "--full-names", "--hide-art-frames", "-i"])
        .arg(data)
        .args(args)
        .args(extra));
    assert!(o.status.success(), "{args:?} {extra:?}: {}", stderr(&o));
    o
}

/// A json row: event, weight, stack innermost first.
type Row = (String, f64, Vec<String>);

/// json rows.
fn json_rows(data: &Path, args: &[&str]) -> Vec<Row> {
    json_rows_and_shared_names(data, args).0
}

/// json rows, and the names that more than one function carries (in several binaries, or
/// inlined and not): the text report keeps those apart.
fn json_rows_and_shared_names(data: &Path, args: &[&str]) -> (Vec<Row>, HashSet<String>) {
    let mut identity: BTreeMap<String, HashSet<(String, bool)>> = BTreeMap::new();
    let rows = stdout(&report(data, args, &["--format", "json"]))
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let mut stack = Vec::new();
            for f in v["stack"].as_array().unwrap() {
                let name = f["symbol"].as_str().unwrap().to_string();
                let id = (f["dso"].as_str().unwrap().to_string(), f["inlined"].as_bool().unwrap());
                identity.entry(name.clone()).or_default().insert(id);
                stack.push(name);
            }
            (v["event"].as_str().unwrap().to_string(), v["period"].as_f64().unwrap(), stack)
        })
        .collect();
    let shared = identity.into_iter().filter(|(_, ids)| ids.len() > 1).map(|(n, _)| n).collect();
    (rows, shared)
}

fn text_shares(data: &Path, args: &[&str]) -> (String, Shares) {
    let children: &[&str] = if args.contains(&"--children") { &[] } else { &["--children"] };
    let extra = [children, &["--sort", "symbol", "--raw-period"]].concat();
    let text = stdout(&report(data, args, &extra));
    let event = text.lines().find_map(|l| l.strip_prefix("Event: ")).expect("a section").to_string();
    let event = event.rsplit_once(" (type").map_or(event.clone(), |(n, _)| n.to_string());
    let mut s = Shares::default();
    let mut in_section = false;
    for l in text.lines() {
        if l.starts_with("Event: ") {
            if in_section {
                break;
            }
            in_section = true;
        } else if let Some(t) = l.strip_prefix("Event count: ").or_else(|| l.strip_prefix("Time in ns: ")) {
            s.total = t.parse().unwrap();
        } else if let Some((children, rest)) = l.split_once("  ") {
            let Ok(children) = children.trim().parse::<f64>() else { continue };
            let name = rest.trim_start().split_once("  ").map_or(rest, |(_, n)| n).trim();
            let name = name.strip_suffix(" (inlined)").unwrap_or(name);
            *s.by_func.entry(name.to_string()).or_default() += children;
        }
    }
    (event, s)
}

fn folded_shares(data: &Path, args: &[&str]) -> Shares {
    let mut s = Shares::default();
    for l in stdout(&report(data, args, &["--format", "folded", "--event-counts"])).lines() {
        let (stack, w) = l.rsplit_once(' ').unwrap();
        s.add(stack.split(';').skip(1).map(str::to_string), w.parse().unwrap());
    }
    s
}

/// inferno's SVG: each frame's title is `name (N unit, P%)`; a function's nodes are summed,
/// which is its inclusive weight when it appears once per stack.
fn svg_shares(data: &Path, args: &[&str], dir: &Path) -> Shares {
    let svg = dir.join("flame.svg");
    report(data, args, &["--event-counts", "-o", svg.to_str().unwrap()]);
    let text = std::fs::read_to_string(&svg).unwrap();
    let mut s = Shares::default();
    for t in text.split("<title>").skip(1) {
        let t = &t[..t.find("</title>").unwrap()];
        let Some((name, rest)) = t.rsplit_once(" (") else { continue };
        let n: f64 = rest.split(' ').next().unwrap().replace(',', "").parse().unwrap();
        let name = name
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&apos;", "'")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        if name == "all" {
            s.total = n;
        } else {
            *s.by_func.entry(name).or_default() += n;
        }
    }
    s
}

fn html_shares(data: &Path, args: &[&str], dir: &Path) -> Shares {
    let page = dir.join("report.html");
    report(data, args, &["--event-counts", "-o", page.to_str().unwrap()]);
    let text = std::fs::read_to_string(&page).unwrap();
    let start = text.find("<script id=\"profile-data\" type=\"application/json\">").unwrap();
    let body = &text[start..];
    let json = &body[body.find('>').unwrap() + 1..body.find("</script>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&json.replace("<\\/", "</")).unwrap();
    let funcs: Vec<String> =
        v["funcs"].as_array().unwrap().iter().map(|f| f[0].as_str().unwrap().to_string()).collect();
    let mut s = Shares::default();
    for st in v["stacks"].as_array().unwrap() {
        let frames = st[2].as_array().unwrap().iter().map(|f| funcs[f.as_u64().unwrap() as usize].clone());
        s.add(frames, st[1].as_f64().unwrap());
    }
    s
}

/// `go tool pprof -raw`: the samples with their values and the functions of each location.
fn pprof_shares(data: &Path, args: &[&str], dir: &Path) -> Shares {
    let pb = dir.join("cpu.pb.gz");
    report(data, args, &["-o", pb.to_str().unwrap()]);
    let o = run(Command::new("go").args(["tool", "pprof", "-raw"]).arg(&pb));
    assert!(o.status.success(), "{}", stderr(&o));
    // -raw prints the samples: `values: stack` with the locations' functions by id.
    let raw = stdout(&o);
    let mut funcs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut last_location = String::new();
    let mut section = "";
    let mut s = Shares::default();
    let mut samples: Vec<(f64, Vec<String>)> = Vec::new();
    for l in raw.lines() {
        if l.starts_with("Samples:") || l.starts_with("Locations") || l.starts_with("Mappings") {
            section = if l.starts_with("Samples:") {
                "samples"
            } else if l.starts_with("Locations") {
                "locations"
            } else {
                "mappings"
            };
            continue;
        }
        match section {
            "samples" => {
                let t = l.trim();
                if let Some((values, locs)) = t.split_once(": ") {
                    let Some(v) = values.split_whitespace().nth(1).and_then(|v| v.parse::<f64>().ok()) else {
                        continue;
                    };
                    samples.push((v, locs.split_whitespace().map(str::to_string).collect()));
                }
            }
            "locations" => {
                // `     1: 0x1234 M=1 name file:line s=0`, then one more line per inline frame
                // (`             name file:line s=0`); the name may hold spaces.
                let t: Vec<&str> = l.split_whitespace().collect();
                if t.len() < 3 {
                    continue;
                }
                let first = t[0].strip_suffix(':').filter(|id| id.chars().all(|c| c.is_ascii_digit()));
                // pprof prints C++ names shortened, then `s=0(FULL NAME)` where the name it was
                // given differs from what it prints (or the system name: mangled, or with its
                // symbol version).
                let line = l.trim_start();
                let full = line.find(" s=").and_then(|at| {
                    let rest = &line[at + 3..];
                    let open = rest.find('(')?;
                    Some(rest[open + 1..rest.len() - 1].to_string())
                        .filter(|n| !n.starts_with("_Z") && !n.contains('@'))
                });
                let (id, name) = match first {
                    Some(id) if t.len() >= 5 => (id.to_string(), t[3..t.len() - 2].join(" ")),
                    Some(_) => continue,
                    None => (last_location.clone(), t[..t.len() - 2].join(" ")),
                };
                let name = full.unwrap_or(name);
                last_location = id.clone();
                funcs.entry(id).or_default().push(name);
            }
            _ => {}
        }
    }
    for (v, locs) in samples {
        s.add(locs.iter().flat_map(|l| funcs.get(l).cloned().unwrap_or_default()), v);
    }
    s
}

/// The Firefox Profiler's processed format: each thread's samples, stacks and functions.
fn gecko_shares(data: &Path, args: &[&str]) -> Shares {
    let o = report(data, args, &["--format", "gecko"]);
    let g: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut s = Shares::default();
    for t in g["threads"].as_array().unwrap() {
        let strings: Vec<&str> =
            t["stringArray"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let func_name =
            |f: u64| strings[t["funcTable"]["name"][f as usize].as_u64().unwrap() as usize].to_string();
        let frame_func = |fr: u64| t["frameTable"]["func"][fr as usize].as_u64().unwrap();
        let stacks = &t["stackTable"];
        let samples = &t["samples"];
        let n = samples["length"].as_u64().unwrap() as usize;
        for i in 0..n {
            let w = samples["weight"].get(i).and_then(|w| w.as_f64()).unwrap_or(1.0);
            let mut frames = Vec::new();
            let mut at = samples["stack"][i].as_u64();
            while let Some(st) = at {
                frames.push(func_name(frame_func(stacks["frame"][st as usize].as_u64().unwrap())));
                at = stacks["prefix"][st as usize].as_u64();
            }
            s.add(frames, w);
        }
    }
    s
}

/// Compares a format's shares with the reference: the total (when the format has one in the
/// same unit) and every function's share, within 0.1 point.
fn agree(what: &str, reference: &Shares, got: &Shares, same_unit: bool) {
    assert!(reference.total > 0.0, "{what}: no samples");
    if same_unit {
        let rel = (got.total - reference.total).abs() / reference.total;
        assert!(rel < 1e-6, "{what}: total {} against {}", got.total, reference.total);
    }
    for (f, _) in reference.by_func.iter().filter(|(f, _)| comparable(f)) {
        let (want, have) = (reference.pct(f), got.pct(f));
        assert!((want - have).abs() <= 0.1, "{what}: {f} is {have:.3}% against {want:.3}%\n{got:?}");
    }
    for (f, _) in got.by_func.iter().filter(|(f, _)| comparable(f)) {
        assert!(reference.by_func.contains_key(f) || got.pct(f) < 0.1, "{what}: {f} is not in the reference");
    }
}

/// Checks every format of `data` reported with `args` against its json rows.
fn check_all_formats(name: &str, data: &Path, args: &[&str]) {
    let dir = scratch(&format!("agree_{name}_out"));
    let (rows, shared_names) = json_rows_and_shared_names(data, args);
    assert!(!rows.is_empty(), "{name}: no samples");
    let (event, text) = text_shares(data, args);
    let mut main = Shares::default();
    let mut main_samples = Shares::default();
    for (e, w, stack) in &rows {
        if *e == event {
            main.add(stack.iter().cloned(), *w);
            main_samples.add(stack.iter().cloned(), 1.0);
        }
    }
    // The Firefox Profiler counts samples; time-weighted sections weigh them by their time.
    let time = stdout(&report(data, args, &[])).contains("Time in ns: ");
    // Text counts each entry once per stack by its full identity; names merged here could
    // count twice, so shares are compared where names are unique.
    let unique = |s: &Shares| Shares {
        total: s.total,
        by_func: s
            .by_func
            .iter()
            .filter(|(f, _)| !shared_names.contains(*f))
            .map(|(f, w)| (f.clone(), *w))
            .collect(),
    };
    // A --symbols or --dsos filter with --children makes the selected functions the text
    // report's only entries (simpleperf's semantics): those are compared.
    let entries_only = args.iter().any(|a| *a == "--symbols" || *a == "--dsos");
    let listed = |s: &Shares| Shares {
        total: s.total,
        by_func: s
            .by_func
            .iter()
            .filter(|(f, _)| !entries_only || text.by_func.contains_key(*f))
            .map(|(f, w)| (f.clone(), *w))
            .collect(),
    };
    // The text report reads --max-stack as the depth of the call graphs it prints (as
    // simpleperf does): its shares are those of the whole stacks.
    let whole = match args.iter().position(|a| *a == "--max-stack") {
        Some(i) => {
            let mut whole = Shares::default();
            let rest = [&args[..i], &args[i + 2..]].concat();
            for (_, w, stack) in json_rows(data, &rest).iter().filter(|r| r.0 == event) {
                whole.add(stack.iter().cloned(), *w);
            }
            whole
        }
        None => main.clone(),
    };
    agree(&format!("{name} text"), &unique(&listed(&whole)), &unique(&text), true);
    agree(&format!("{name} folded"), &main, &folded_shares(data, args), true);
    agree(&format!("{name} html"), &main, &html_shares(data, args, &dir), true);
    agree(
        &format!("{name} gecko"),
        if time { &main } else { &main_samples },
        &gecko_shares(data, args),
        false,
    );
    agree(&format!("{name} pprof"), &main, &pprof_shares(data, args, &dir), true);
    // Inferno sums a function's nodes; compare the functions that appear once per stack.
    let svg = svg_shares(data, args, &dir);
    let mut once = Shares { total: main.total, by_func: BTreeMap::new() };
    let repeated: HashSet<&String> = rows
        .iter()
        .flat_map(|(_, _, st)| {
            let mut seen = HashSet::new();
            st.iter().filter(move |f| !seen.insert(*f)).collect::<Vec<_>>()
        })
        .collect();
    // The flamegraph's thread frames carry thread names, which functions may share.
    let comms: HashSet<String> = stdout(&report(data, args, &["--format", "folded"]))
        .lines()
        .map(|l| l.split(';').next().unwrap().to_string())
        .collect();
    for (f, w) in &main.by_func {
        if !repeated.contains(f) && !comms.contains(f) {
            once.by_func.insert(f.clone(), *w);
        }
    }
    let svg_once = Shares {
        total: svg.total,
        by_func: svg.by_func.into_iter().filter(|(f, _)| once.by_func.contains_key(f)).collect(),
    };
    agree(&format!("{name} svg"), &once, &svg_once, true);
}

fn record(name: &str, args: &[&str], program: &[&str]) -> PathBuf {
    let data = scratch(&format!("agree_{name}")).join("perf.data");
    let o = run(rperf().arg("record").args(args).arg("-o").arg(&data).arg("--").args(program));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn cpu_clock_frame_pointers_and_filters() {
    let data = record("fp", &["-g", "fp", "-F", "2000"], &[path(&programs().mixed_fp)]);
    check_all_formats("fp", &data, &[]);
    // The same with a thread filter and a symbol filter on the sampled function.
    // The most sampled function: with --children every format keeps the samples whose stacks
    // hold it, and the text report lists it alone.
    let rows = json_rows(&data, &[]);
    let mut leaves: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| comparable(&r.2[0])) {
        *leaves.entry(r.2[0].as_str()).or_default() += 1;
    }
    let leaf = leaves.iter().max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l))).unwrap().0.to_string();
    check_all_formats("fp_symbol", &data, &["--children", "--symbols", &leaf]);
    check_all_formats("fp_max_stack", &data, &["--max-stack", "3"]);
}

#[test]
fn dwarf() {
    let data = record("dwarf", &["-g", "dwarf", "-F", "1000"], &[path(&programs().workload)]);
    check_all_formats("dwarf", &data, &[]);
}

#[test]
fn several_events() {
    let data = record(
        "events",
        &["-g", "fp", "-e", "cpu-clock,page-faults", "-c", "1000000"],
        &[path(&programs().mixed_fp)],
    );
    let rows = json_rows(&data, &[]);
    let events: HashSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert!(events.contains("cpu-clock") && events.contains("page-faults"), "{events:?}");
    check_all_formats("events", &data, &[]);
}

#[test]
fn tracepoints_only() {
    let data =
        record("tracepoint", &["-g", "fp", "-e", "sched:sched_switch"], &[path(&programs().offcpu), "1"]);
    // A tracepoint recording is not an off-CPU recording: event counts, not time.
    let text = stdout(&report(&data, &[], &[]));
    assert!(text.contains("Event: sched:sched_switch (type 2") && text.contains("Event count: "), "{text}");
    assert!(!text.contains("off-cpu"), "{text}");
    check_all_formats("tracepoint", &data, &[]);
    // perf reads the tracepoint's fields from the recording's tracing data, without a word.
    let o = run(Command::new("perf").arg("script").arg("-i").arg(&data));
    assert!(o.status.success() && o.stderr.is_empty(), "perf script: {}", stderr(&o));
    assert!(stdout(&o).contains("sched:sched_switch: prev_comm="), "{}", stdout(&o));
}

#[test]
fn off_cpu_in_every_mode() {
    let data = record("offcpu", &["--trace-offcpu", "-g", "fp"], &[path(&programs().offcpu), "1"]);
    for mode in ["mixed-on-off-cpu", "off-cpu", "on-cpu"] {
        check_all_formats(&format!("offcpu_{mode}"), &data, &["--trace-offcpu", mode]);
    }
    // Blocked time is in every format; off-CPU stacks end in the marker frame in stack outputs.
    let folded = stdout(&report(&data, &["--trace-offcpu", "off-cpu"], &["--format", "folded"]));
    assert!(folded.lines().all(|l| l.rsplit_once(" ").unwrap().0.ends_with(";[off-cpu]")), "{folded}");
    assert!(folded.contains(";__schedule;[off-cpu] "), "{folded}");
}

#[test]
fn jit() {
    let dir = scratch("agree_jit");
    let data = dir.join("perf.data");
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/hot.js");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-o"])
        .arg(&data)
        .args(["--", "node", "--perf-basic-prof"])
        .arg(&js)
        .current_dir(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = json_rows(&data, &[]);
    assert!(rows.iter().any(|r| r.2.iter().any(|f| f.contains("hotJsFunction"))), "JIT frames are named");
    check_all_formats("jit", &data, &[]);
    // Node's map files stay in /tmp after it exits: the recording names them.
    let dsos = stdout(&report(&data, &[], &["--sort", "dso"]));
    let maps: Vec<&str> =
        dsos.split_whitespace().filter(|w| w.starts_with("/tmp/perf-") && w.ends_with(".map")).collect();
    assert!(!maps.is_empty(), "{dsos}");
    for m in maps {
        std::fs::remove_file(m).ok();
    }
}

#[test]
fn simpleperf_recordings() {
    // arm64 DWARF recordings from a phone: off-CPU (weighed by time) and a tracepoint file.
    let dir = simpleperf_testdata();
    let symfs = dir.to_str().unwrap().to_string();
    check_all_formats("sp_offcpu", &dir.join("perf_with_trace_offcpu_v2.data"), &["--symfs", &symfs]);
    check_all_formats("sp_tracepoint", &dir.join("perf_with_tracepoint_event.data"), &["--symfs", &symfs]);
    check_all_formats("sp_jit", &dir.join("perf_with_jit_symbol.data"), &["--symfs", &symfs]);
}
