//! Report outputs read by other tools: folded stacks, flamegraph SVG, the HTML page (in
//! headless Chromium), pprof (by `go tool pprof`), the Firefox Profiler's format, JSON lines,
//! and differential flamegraphs.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// One recording of the inline workload shared by the tests of this file.
fn inline_data() -> &'static Path {
    static D: OnceLock<PathBuf> = OnceLock::new();
    D.get_or_init(|| record_fp("out_inline", &programs().inline_cpp, &["1"]))
}

fn report(data: &Path, args: &[&str]) -> String {
    let o = run(rperf().arg("report").args(args).arg("-i").arg(data));
    assert!(o.status.success(), "rperf report {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// `Samples: N` from the text report's header.
fn sample_count(data: &Path) -> u64 {
    let text = report(data, &[]);
    let line = text.lines().find(|l| l.starts_with("Samples:")).expect("Samples line");
    line["Samples:".len()..].trim().parse().unwrap()
}

/// perf's view of the same samples (perf script, without inline frames).
fn perf_samples(data: &Path) -> Vec<ScriptSample> {
    let o = run(Command::new("perf")
        .args(["script", "--no-inline", "-F", "comm,pid,tid,event,ip,sym", "-i"])
        .arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    parse_script(&stdout(&o))
}

/// Folded lines as (stack, count).
fn folded(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .map(|l| {
            let (stack, count) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad folded line {l:?}"));
            (stack.to_string(), count.parse().unwrap_or_else(|_| panic!("bad count in {l:?}")))
        })
        .collect()
}

/// Stacks from `main` down, with counts: the part of each stack that is the program's own.
fn from_main(stacks: impl Iterator<Item = (Vec<String>, u64)>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (frames, n) in stacks {
        if let Some(i) = frames.iter().position(|f| f == "main") {
            *out.entry(frames[i..].join(";")).or_default() += n;
        }
    }
    out
}

#[test]
fn folded_stacks_are_exact() {
    let data = inline_data();
    let lines = folded(&report(data, &["--format", "folded", "--no-inline"]));
    let total: u64 = lines.iter().map(|l| l.1).sum();
    assert_eq!(total, sample_count(data), "folded counts sum to the samples");
    // The same stacks, sample for sample, as perf script shows in the same file.
    let ours = from_main(lines.iter().map(|(s, n)| (s.split(';').skip(1).map(String::from).collect(), *n)));
    let perf = from_main(perf_samples(data).into_iter().map(|s| (s.frames.into_iter().rev().collect(), 1)));
    assert_eq!(ours, perf);
    assert!(ours.get("main;outer_caller").copied().unwrap_or(0) * 10 > total * 9, "{ours:?}");
    // Inline frames are frames of their own; the prefix options name the process and thread.
    let lines = folded(&report(data, &["--format", "folded", "--prefix", "tid"]));
    let pid = perf_samples(data)[0].pid;
    let hot =
        lines.iter().find(|(s, _)| s.ends_with(";main;outer_caller;inner_kernel")).expect("inline frame");
    assert!(hot.0.starts_with(&format!("inline-{pid}/{pid};")), "{hot:?}");
    let by_pid = report(data, &["--format", "folded", "--prefix", "pid", "--event-counts"]);
    let events: u64 = folded(&by_pid).iter().map(|l| l.1).sum();
    assert!(by_pid.lines().all(|l| l.starts_with(&format!("inline-{pid};"))), "{by_pid}");
    assert_eq!(events, sample_count(data) * 500_000, "event counts at 2000 Hz cpu-clock");
}

#[test]
fn folded_tags_kernel_frames() {
    let data = record_syscalls("out_kernel", &["-g", "fp"]);
    let plain = report(&data, &["--format", "folded"]);
    let tagged = report(&data, &["--format", "folded", "--annotate"]);
    assert!(tagged.contains("entry_SYSCALL_64_after_hwframe_[k];"), "{tagged}");
    assert!(!plain.contains("_[k]"), "{plain}");
    // User frames are not tagged; each plain line is the tagged one with the tags removed.
    assert!(tagged.lines().any(|l| l.split(';').nth(1).is_some_and(|f| !f.ends_with("_[k]"))), "{tagged}");
    let untagged: Vec<String> = tagged.lines().map(|l| l.replace("_[k]", "")).collect();
    assert_eq!(untagged, plain.lines().map(String::from).collect::<Vec<_>>());
}

#[test]
fn svg_flamegraph_is_well_formed_with_title_and_names() {
    let data = inline_data();
    let dir = scratch("out_svg");
    let svg = dir.join("flame.svg");
    let o = run(rperf()
        .args(["report", "-o", svg.to_str().unwrap(), "--title", "Inline workload", "-i"])
        .arg(data));
    let text = std::fs::read_to_string(&svg).unwrap();
    // Said as a recording is: where the output went, and its size.
    let size = match text.len() {
        n if n < 100_000 => format!("{:.1} KB", n as f64 / 1e3),
        n => format!("{:.1} MB", n as f64 / 1e6),
    };
    let said = format!("rperf: wrote {} ({size})", svg.display());
    assert!(o.status.success() && stderr(&o).contains(&said), "{said}: {}", stderr(&o));
    let o = run(Command::new("python3")
        .args(["-c", "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])"])
        .arg(&svg));
    assert!(o.status.success(), "not well-formed XML: {}", stderr(&o));
    for name in ["Inline workload", "outer_caller", "inner_kernel", "main"] {
        assert!(text.contains(name), "{name} missing from the SVG");
    }
    assert!(text.contains("function search("), "inferno's search is in the SVG");
    // An icicle graph has its root frame at the top.
    let root_y = |svg: &str| -> u32 {
        let at = svg.find("<title>all (").expect("root frame");
        svg[at..].split("y=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
    };
    let icicle = dir.join("icicle.svg");
    report(data, &["-o", icicle.to_str().unwrap(), "--inverted"]);
    let inverted = std::fs::read_to_string(&icicle).unwrap();
    assert!(root_y(&inverted) < root_y(&text), "{} vs {}", root_y(&inverted), root_y(&text));
}

fn go_pprof(args: &[&str], profile: &Path) -> String {
    let o = run(Command::new("go").args(["tool", "pprof"]).args(args).arg(profile));
    assert!(o.status.success(), "go tool pprof {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// `(flat %, name)` rows of `go tool pprof -top`.
fn pprof_top(text: &str) -> Vec<(f64, String)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') {
                return None;
            }
            Some((f[1].trim_end_matches('%').parse().ok()?, f[5..].join(" ")))
        })
        .collect()
}

#[test]
fn pprof_matches_the_text_report_and_has_inline_lines() {
    let data = record_fp("out_pprof", &programs().mixed_fp, &["1", "2"]);
    let dir = scratch("out_pprof_files");
    let pb = dir.join("cpu.pb.gz");
    report(&data, &["-o", pb.to_str().unwrap()]);
    let top = pprof_top(&go_pprof(&["-top", "-nodecount=15"], &pb));
    // Inlined functions as entries of their own, as pprof's flat column counts them.
    let text = report(&data, &["--sort", "symbol", "--inline"]);
    // pprof adds up functions of the same name (`@plt` of several binaries); so does this.
    let mut ours: BTreeMap<String, f64> = BTreeMap::new();
    for l in text.lines() {
        let Some((pct, name)) = l.split_once('%') else { continue };
        let Ok(pct) = pct.trim().parse::<f64>() else { continue };
        *ours.entry(name.trim().trim_end_matches(" (inlined)").to_string()).or_default() += pct;
    }
    assert!(top.len() >= 5, "{top:?}");
    for (pct, name) in top.iter().filter(|t| t.0 >= 1.0) {
        let name = name.trim_end_matches(" (inline)");
        let mine = ours.get(name).unwrap_or_else(|| panic!("{name} not in the text report:\n{text}"));
        assert!((mine - pct).abs() <= 0.1, "{name}: pprof {pct}%, text {mine}%");
    }
    let lines = go_pprof(&["-lines", "-top"], &pb);
    assert!(lines.contains("mixed.cpp:"), "source lines: {lines}");
    // Inline frames are lines of their location.
    let inline = inline_data();
    let pb = dir.join("inline.pb.gz");
    report(inline, &["-o", pb.to_str().unwrap()]);
    let lines = go_pprof(&["-lines", "-top"], &pb);
    let hot = lines.lines().find(|l| l.contains("inner_kernel")).unwrap_or_else(|| panic!("{lines}"));
    assert!(hot.contains("inline.cpp:") && hot.contains("(inline)"), "{hot}");
    let raw = go_pprof(&["-raw"], &pb);
    assert!(raw.contains("pid:") && raw.contains("tid:") && raw.contains("thread:"), "labels: {raw}");
    assert!(raw.contains("cpu/nanoseconds") && raw.contains("samples/count"), "sample types: {raw}");
    let id = build_id_hex(&programs().inline_cpp);
    assert!(raw.contains(&id), "mapping with build id {id}: {raw}");
}

fn chromium(args: &[&str], url: &str, profile: &Path) -> std::process::Output {
    run(Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=5000"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url))
}

#[test]
fn html_report_renders_and_searches_offline_in_chromium() {
    let data = record_fp("out_html", &programs().mixed_fp, &["1", "2"]);
    let dir = scratch("out_html_files");
    let page = dir.join("report.html");
    report(&data, &["-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing is fetched.
    for needle in ["http://", "https://", " src=", "@import", "url("] {
        assert!(!html.contains(needle), "the page refers to {needle}");
    }
    let url = format!("file://{}#search=own_arith", page.display());
    let o = chromium(&["--dump-dom"], &url, &dir.join("chrome"));
    let dom = stdout(&o);
    assert!(dom.contains("class=\"frame"), "no flamegraph frames rendered: {}", stderr(&o));
    for name in
        ["data-name=\"main\"", "data-name=\"worker\"", "data-name=\"own_arith\"", "data-name=\"use_libm\""]
    {
        assert!(dom.contains(name), "{name} not rendered");
    }
    assert!(dom.contains("class=\"frame match\""), "search highlighted nothing");
    let matched = dom.split("data-matched=\"").nth(1).and_then(|s| s.split('%').next()).unwrap_or("");
    let matched: f64 = matched.parse().unwrap_or_else(|_| panic!("no match share in the page"));
    // Search matches inclusively: every stack through own_arith.
    let stacks = folded(&report(&data, &["--format", "folded"]));
    let total: u64 = stacks.iter().map(|s| s.1).sum();
    let through: u64 = stacks.iter().filter(|s| s.0.split(';').any(|f| f == "own_arith")).map(|s| s.1).sum();
    let own = 100.0 * through as f64 / total as f64;
    assert!((matched - own).abs() < 0.05, "search matched {matched}%, own_arith has {own}%");
    // The function table and the thread selector are filled.
    assert!(dom.contains("<tr class=\"row") && dom.contains("own_arith</td>"), "function table");
    assert!(dom.contains("All threads (2)"), "thread selector");
    let shot = dir.join("report.png");
    let o = chromium(
        &["--window-size=1280,900", &format!("--screenshot={}", shot.display())],
        &url,
        &dir.join("chrome2"),
    );
    assert!(shot.metadata().map(|m| m.len() > 10_000).unwrap_or(false), "screenshot: {}", stderr(&o));
}

#[test]
fn gecko_profile_has_the_firefox_profiler_schema() {
    let data = record_fp("out_gecko", &programs().mixed_fp, &["1", "2"]);
    let out = data.with_file_name("profile.gecko.json");
    report(&data, &["-o", out.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let meta = &v["meta"];
    assert!(meta["version"].as_u64().is_some_and(|x| x >= 24), "meta.version: {meta}");
    assert!(meta["interval"].as_f64().is_some_and(|x| (x - 0.5).abs() < 0.01), "0.5 ms at 2000 Hz: {meta}");
    assert!(meta["startTime"].as_f64().is_some_and(|x| x > 1.6e12), "start time in ms since the epoch");
    let threads = v["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 2, "main thread and worker");
    let mut samples = 0;
    for t in threads {
        let s = &t["samples"];
        let n = s["length"].as_u64().expect("samples.length") as usize;
        assert_eq!(s["stack"].as_array().unwrap().len(), n);
        assert_eq!(s["time"].as_array().or(s["timeDeltas"].as_array()).expect("sample times").len(), n);
        for table in ["stackTable", "frameTable", "funcTable"] {
            assert!(t[table]["length"].as_u64().is_some(), "{table}");
        }
        assert!(t["tid"].is_number() || t["tid"].is_string());
        samples += n as u64;
    }
    assert_eq!(samples, sample_count(&data));
    let strings = v.to_string();
    assert!(strings.contains("\"own_arith\"") && strings.contains("\"worker\""), "function names");
}

#[test]
fn json_lines_have_one_record_per_sample() {
    let data = inline_data();
    let text = report(data, &["--format", "json"]);
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len() as u64, sample_count(data));
    let mut last = 0;
    for r in &records {
        for k in ["event", "time", "pid", "tid", "comm", "cpu", "period", "stack"] {
            assert!(!r[k].is_null(), "{k} missing in {r}");
        }
        let t = r["time"].as_u64().unwrap();
        assert!(t >= last, "samples in time order");
        last = t;
    }
    let hot = records.iter().filter(|r| r["stack"][0]["symbol"] == "inner_kernel").count();
    assert!(hot * 5 >= records.len(), "{hot} of {} samples in inner_kernel", records.len());
    let r = records.iter().find(|r| r["stack"][0]["symbol"] == "inner_kernel").unwrap();
    let leaf = &r["stack"][0];
    assert_eq!(leaf["inlined"], true);
    assert!(leaf["file"].as_str().unwrap().ends_with("inline.cpp"), "{leaf}");
    assert!(leaf["line"].as_u64().is_some(), "{leaf}");
    assert_eq!(r["stack"][1]["symbol"], "outer_caller");
}

/// `rperf report --diff BEFORE -i AFTER ARGS...`.
fn diff_report(before: &Path, after: &Path, args: &[&str]) -> std::process::Output {
    run(rperf().args(["report", "--diff"]).arg(before).arg("-i").arg(after).args(args))
}

#[test]
fn differential_flamegraph_shows_the_hot_function_that_changed() {
    let before = record_fp("out_diff_before", &programs().phases, &["before", "1"]);
    let after = record_fp("out_diff_after", &programs().phases, &["after", "1"]);
    let dir = scratch("out_diff");
    let svg = dir.join("diff.svg");
    let o = diff_report(&before, &after, &["-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    let fill = |name: &str| -> (u32, u32, u32) {
        let at = text.find(&format!("<title>{name} ")).unwrap_or_else(|| panic!("{name} not in the diff"));
        let rest = &text[at..];
        let rgb = rest.split("fill=\"rgb(").nth(1).unwrap().split(')').next().unwrap();
        let v: Vec<u32> = rgb.split(',').map(|x| x.trim().parse().unwrap()).collect();
        (v[0], v[1], v[2])
    };
    let (r, g, b) = fill("func_beta");
    assert!(r == 255 && g < 200 && b < 200, "func_beta grew: rgb({r},{g},{b})");
    // The HTML page marks the same frames.
    let page = dir.join("diff.html");
    let o = diff_report(&before, &after, &["-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = chromium(&["--dump-dom"], &format!("file://{}", page.display()), &dir.join("chrome"));
    let dom = stdout(&o);
    let frame =
        dom.split("<div").find(|d| d.contains("data-name=\"func_beta\"")).expect("func_beta rendered");
    assert!(frame.contains("data-delta=\"grew\""), "{frame}");
    // Folded output gives differential folded stacks: `stack base new`, normalized.
    let o = diff_report(&before, &after, &["--format", "folded"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let counts = |leaf: &str| -> (u64, u64) {
        stdout(&o)
            .lines()
            .filter(|l| l.split(' ').next().is_some_and(|s| s.ends_with(leaf)))
            .map(|l| {
                let f: Vec<&str> = l.rsplitn(3, ' ').collect();
                (f[1].parse::<u64>().unwrap(), f[0].parse::<u64>().unwrap())
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    };
    let (alpha_before, alpha_after) = counts(";func_alpha");
    let (beta_before, beta_after) = counts(";func_beta");
    assert!(alpha_before > 10 * alpha_after.max(1) && beta_after > 10 * beta_before.max(1), "{}", stdout(&o));
    // pprof has no comparison.
    let o = diff_report(&before, &after, &["--format", "pprof"]);
    assert!(!o.status.success() && stderr(&o).contains("--diff"), "{}", stderr(&o));
}

#[test]
fn text_diff_lists_functions_by_change() {
    let before = record_fp("out_tdiff_before", &programs().phases, &["before", "1"]);
    let after = record_fp("out_tdiff_after", &programs().phases, &["after", "1"]);
    let o = diff_report(&before, &after, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // Baseline, New and Delta shares per function, the largest change first.
    let rows: Vec<(f64, f64, f64, String)> = text
        .lines()
        .skip_while(|l| !l.starts_with("Baseline "))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let p = |s: &str| s.trim_end_matches('%').parse::<f64>().unwrap();
            (p(f[0]), p(f[1]), p(f[2]), f.last().unwrap().to_string())
        })
        .collect();
    assert!(rows.len() >= 2, "{text}");
    let top: Vec<&str> = rows[..2].iter().map(|r| r.3.as_str()).collect();
    assert!(top.contains(&"func_alpha") && top.contains(&"func_beta"), "{text}");
    for (b, n, d, name) in &rows {
        assert!((n - b - d).abs() < 0.011, "{name}: {b} {n} {d}");
    }
    let alpha = rows.iter().find(|r| r.3 == "func_alpha").unwrap();
    assert!(alpha.0 > 50.0 && alpha.1 < 5.0 && alpha.2 < -45.0, "{text}");
}

#[test]
fn names_from_the_recording_are_data_in_every_format() {
    // A binary whose path holds an HTML comment and script tag, a newline and an escape
    // sequence: every output must carry it without breaking.
    let dir = scratch("out_hostile_names");
    let sub = dir.join("x<!--<script>\n\x1b[31m;evil");
    std::fs::create_dir_all(&sub).unwrap();
    let prog = sub.join("workload");
    copy_executable(&programs().workload_fp, &prog);
    let data = record_fp("out_hostile_names_rec", &prog, &["0.3", "1"]);
    let text = report(&data, &["--sort", "dso,symbol"]);
    assert!(!text.contains('\x1b'), "escape sequences reach the terminal");
    assert!(text.contains("\\x1b[31m;evil/workload"), "{text}");
    let folded = report(&data, &["--format", "folded"]);
    for l in folded.lines() {
        let (_, count) = l.rsplit_once(' ').unwrap();
        assert!(count.parse::<u64>().is_ok(), "a folded line is broken: {l:?}");
    }
    assert!(!folded.contains('\x1b'));
    // The SVG is well-formed XML: no control characters but tab and newline, `<` only in tags.
    let svg = report(&data, &["--format", "svg"]);
    assert!(
        !svg.chars().any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r'),
        "control characters in the SVG"
    );
    assert!(!svg.contains("<!--<script>"), "the name is not escaped in the SVG");
    // The HTML page still renders its rows.
    let page = dir.join("report.html");
    report(&data, &["-o", page.to_str().unwrap()]);
    let o = chromium(&["--dump-dom"], &format!("file://{}", page.display()), &dir.join("chrome"));
    let dom = stdout(&o);
    assert!(
        dom.contains("<tr class=\"row") && dom.contains("hot_loop</td>"),
        "no function rows: {}",
        stderr(&o)
    );
}

#[test]
fn html_timeline_selects_a_time_range_in_chromium() {
    let data = record_fp("out_timeline", &programs().phases, &["before", "1"]);
    let dir = scratch("out_timeline_files");
    let page = dir.join("report.html");
    report(&data, &["-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    let json = html.split("<script id=\"profile-data\" type=\"application/json\">").nth(1).unwrap();
    let d: serde_json::Value = serde_json::from_str(json.split("</script>").next().unwrap()).unwrap();
    let t = &d["timeline"];
    let (start, span, buckets) =
        (t["start"].as_u64().unwrap(), t["span"].as_u64().unwrap(), t["buckets"].as_u64().unwrap());
    // What the selection of 0.2 s to 0.5 s holds, from the samples' own timestamps.
    let from = (0.2e9 * buckets as f64 / span as f64).floor() as u64;
    let to = (0.5e9 * buckets as f64 / span as f64).ceil() as u64;
    let rows: Vec<serde_json::Value> =
        report(&data, &["--format", "json"]).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let times: Vec<u64> = rows.iter().map(|r| r["time"].as_u64().unwrap()).collect();
    let in_range = |t: u64| {
        let part = ((t - start) as u128 * buckets as u128 / span as u128) as u64;
        part >= from && part < to
    };
    let want = times.iter().filter(|&&t| in_range(t)).count();
    // ... and of them, those taken in func_alpha.
    let alpha = rows
        .iter()
        .filter(|r| in_range(r["time"].as_u64().unwrap()) && r["stack"][0]["symbol"] == "func_alpha")
        .count();
    // 0.3 s of a 1 s run: a share of the samples the run took, however busy the machine.
    assert!(want >= 20 && want * 10 > times.len() && want < times.len() / 2, "{want} of {}", times.len());
    let total = |dom: &str| -> usize {
        dom.split("data-total=\"").nth(1).and_then(|s| s.split('"').next()).unwrap().parse().unwrap()
    };
    let all = stdout(&chromium(&["--dump-dom"], &format!("file://{}", page.display()), &dir.join("c1")));
    assert_eq!(total(&all), times.len(), "the whole recording");
    assert!(all.contains("class=\"lane\""), "the timeline has a lane per thread");
    let dom = stdout(&chromium(
        &["--dump-dom"],
        &format!("file://{}#time=0.2,0.5", page.display()),
        &dir.join("c2"),
    ));
    assert_eq!(total(&dom), want, "the flamegraph shows the selected range");
    // The source and instructions of the selected function follow the range too.
    let url = format!("file://{}#func=func_alpha&time=0.2,0.5", page.display());
    let dom = stdout(&chromium(&["--dump-dom"], &url, &dir.join("c3")));
    let code =
        dom.split("id=\"code-table\" data-total=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("");
    assert_eq!(code.parse::<usize>().ok(), Some(alpha), "func_alpha's instructions in the range");
    assert!(dom.contains("phases.cpp:"), "source lines");
    // With the text of the line, read from the source file the binary names.
    assert!(dom.contains("void func_alpha(long n) { SPIN(n, 0.5) }"), "source text");
}
