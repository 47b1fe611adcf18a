//! Tools that open rperf's recordings read what they need from them: perf's time features
//! (sample time range, clock id and clock data) for `perf report --time PERCENT` and
//! `perf script -F tod`, with the clock chosen by `record --clockid`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn record(name: &str, args: &[&str]) -> PathBuf {
    let data = scratch(name).join("perf.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-F", "2000", "-o"])
        .arg(&data)
        .args(args)
        .arg("--")
        .arg(&programs().phases)
        .args(["before", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

fn perf(args: &[&str], data: &Path) -> String {
    let o = run(Command::new("perf").args(args).arg("-i").arg(data));
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn shell(cmd: &str) -> String {
    stdout(&run(Command::new("sh").args(["-c", cmd]))).trim().to_string()
}

#[test]
fn perf_reads_the_sample_time_range_and_the_clock() {
    let before = shell("date +%F");
    let data = record("clock_default", &[]);
    let after = shell("date +%F");
    let header = perf(&["report", "--header-only"], &data);
    assert!(header.contains("# time of first sample :"), "{header}");
    assert!(header.contains("# clockid: monotonic (1)"), "{header}");
    // Percent slices of the recording, which need the sample time range: halves add up.
    let count = |time: &str| perf(&["script", "-F", "comm", "--time", time], &data).lines().count();
    let all = perf(&["script", "-F", "comm"], &data).lines().count();
    let (first, second) = (count("0%-50%"), count("50%-100%"));
    assert!(first > 0 && second > 0 && first + second == all, "{first} + {second} of {all}");
    // The time of day of each sample, from the clock data.
    let tod = perf(&["script", "-F", "tod"], &data);
    let day = tod.split_whitespace().next().unwrap_or_default().to_string();
    assert!(day == before || day == after, "perf script -F tod says {day}, today is {before}:\n{tod:.300}");

    // --clockid realtime: sample times are seconds since the epoch.
    let now: f64 = shell("date +%s").parse().unwrap();
    let data = record("clock_realtime", &["--clockid", "realtime"]);
    assert!(perf(&["report", "--header-only"], &data).contains("# clockid: realtime (0)"));
    let first: f64 = perf(&["script", "-F", "time"], &data)
        .split_whitespace()
        .next()
        .and_then(|t| t.trim_end_matches(':').parse().ok())
        .expect("a sample time");
    assert!((first - now).abs() < 600.0, "first sample at {first}, now {now}");
    // rperf reads them too.
    let o = run(rperf().args(["report", "--sort", "comm", "-i"]).arg(&data));
    assert!(o.status.success() && stdout(&o).contains("phases"), "{}", stderr(&o));

    let o = run(rperf()
        .args(["record", "-k", "sundial", "-o"])
        .arg(scratch("clock_bad").join("x.data"))
        .arg("true"));
    assert!(!o.status.success() && stderr(&o).contains("monotonic_raw"), "{}", stderr(&o));
}

fn report(data: &Path, args: &[&str]) -> Vec<u8> {
    let o = run(rperf().arg("report").arg("-i").arg(data).args(args));
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o.stdout
}

/// The Firefox Profiler's processed format (the gecko output): (weight type, total weight) of
/// all threads' samples.
fn gecko_weights(data: &Path) -> (std::collections::BTreeSet<String>, f64) {
    let g: serde_json::Value = serde_json::from_slice(&report(data, &["--format", "gecko"])).unwrap();
    let mut types = std::collections::BTreeSet::new();
    let mut total = 0.0;
    for t in g["threads"].as_array().unwrap() {
        let s = &t["samples"];
        types.insert(s["weightType"].as_str().unwrap_or("samples").to_string());
        let n = s["length"].as_u64().unwrap() as usize;
        // A missing weight column means 1 per sample (the format's documentation).
        total += (0..n).map(|i| s["weight"].get(i).and_then(|w| w.as_f64()).unwrap_or(1.0)).sum::<f64>();
    }
    (types, total)
}

#[test]
fn gecko_weighs_off_cpu_samples_in_milliseconds() {
    let data = scratch("gecko_offcpu").join("perf.data");
    let o = run(rperf().args(["record", "--trace-offcpu", "-o"]).arg(&data).arg(&programs().offcpu));
    assert!(o.status.success(), "{}", stderr(&o));
    let ns: u64 = String::from_utf8(report(&data, &["--format", "json"]))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["period"].as_u64().unwrap())
        .sum();
    let (types, ms) = gecko_weights(&data);
    assert_eq!(types.into_iter().collect::<Vec<_>>(), ["tracing-ms"]);
    assert!(ns > 0 && (ms - ns as f64 / 1e6).abs() < 1e-6 * ms, "{ms} ms against {ns} ns");
    // A sampled recording counts samples.
    let data = record("gecko_sampled", &[]);
    let (types, count) = gecko_weights(&data);
    let rows = String::from_utf8(report(&data, &["--format", "json"])).unwrap().lines().count();
    assert_eq!((types.into_iter().collect::<Vec<_>>(), count as usize), (vec!["samples".to_string()], rows));
}

/// `go tool pprof -raw` of a profile: (sample type names, each sample's values, the mappings
/// as (start, limit, offset, file), the locations as (id, address, mapping, function)).
#[allow(clippy::type_complexity)]
fn pprof_raw(
    profile: &Path,
) -> (Vec<String>, Vec<Vec<u64>>, Vec<(u64, u64, u64, String)>, Vec<(u64, u64, usize, String)>) {
    let o = run(Command::new("go").args(["tool", "pprof", "-raw"]).arg(profile));
    assert!(o.status.success(), "go tool pprof -raw: {}", stderr(&o));
    let text = stdout(&o);
    let mut lines = text.lines();
    let types: Vec<String> = lines
        .by_ref()
        .skip_while(|l| *l != "Samples:")
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .map(|t| t.split('/').next().unwrap().to_string())
        .collect();
    let mut samples = Vec::new();
    for l in lines.by_ref().take_while(|l| !l.starts_with("Locations")) {
        if let Some((values, _)) = l.split_once(':') {
            if let Ok(v) = values.split_whitespace().map(str::parse).collect::<Result<Vec<u64>, _>>() {
                samples.push(v);
            }
        }
    }
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let mut locations = Vec::new();
    for l in lines.by_ref().take_while(|l| !l.starts_with("Mappings")) {
        // `    12: 0x5651a1c2754f M=1 own_arith /path/mixed.cpp:19 s=0`
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() >= 4 && t[0].ends_with(':') && t[2].starts_with("M=") {
            let id = t[0].trim_end_matches(':').parse().unwrap();
            locations.push((id, hex(t[1]), t[2][2..].parse().unwrap(), t[3].to_string()));
        }
    }
    let mut mappings = Vec::new();
    for l in lines {
        // `1: 0x5651a1c27000/0x5651a1c29000/0x1000 /path/binary BUILDID [FN]...`
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() >= 3 && t[0].ends_with(':') {
            let r: Vec<u64> = t[1].split('/').map(hex).collect();
            mappings.push((r[0], r[1], r[2], t[2].to_string()));
        }
    }
    (types, samples, mappings, locations)
}

/// A symbol's (value, size) in a binary's symbol table.
fn symbol(binary: &Path, name: &str) -> (u64, u64) {
    let text = stdout(&run(Command::new("nm").arg("-S").arg(binary)));
    let t: Vec<&str> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|t| t.len() == 4 && t[3] == name)
        .expect(name)
        .clone();
    (u64::from_str_radix(t[0], 16).unwrap(), u64::from_str_radix(t[1], 16).unwrap())
}

#[test]
fn pprof_mappings_are_the_recorded_ones_with_the_main_binary_first() {
    let program = &programs().mixed_fp;
    let data = scratch("pprof_mappings").join("perf.data");
    let o = run(rperf().args(["record", "-g", "fp", "-o"]).arg(&data).arg(program).arg("1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let profile = data.with_file_name("profile.pb.gz");
    let o = run(rperf().arg("report").arg("-i").arg(&data).arg("-o").arg(&profile));
    assert!(o.status.success(), "{}", stderr(&o));
    let (_, _, mappings, locations) = pprof_raw(&profile);
    assert_eq!(Path::new(&mappings[0].3), program.as_path(), "main binary first: {mappings:?}");
    for (start, limit, _, file) in &mappings {
        assert!(start < limit && *limit != u64::MAX, "{file}: {start:#x}..{limit:#x}");
    }
    // Each location of the program lies in its mapping and, taken back to the binary through
    // the mapping's file offset, in the function it is named by.
    let (value, size) = symbol(program, "own_arith");
    let own: Vec<_> = locations.iter().filter(|l| l.3 == "own_arith").collect();
    assert!(!own.is_empty(), "{locations:?}");
    for (_, address, m, _) in own {
        let (start, limit, offset, _) = &mappings[m - 1];
        assert!(address >= start && address < limit);
        // The program's code segment has equal file offsets and addresses (readelf -l).
        let in_file = address - start + offset;
        assert!(
            in_file >= value && in_file < value + size,
            "{in_file:#x} not in own_arith {value:#x}+{size:#x}"
        );
    }
    // go tool pprof lists the source with the samples on its lines.
    let o = run(Command::new("go").args(["tool", "pprof", "-list=own_arith"]).arg(&profile));
    let list = stdout(&o);
    assert!(
        o.status.success() && list.contains("ROUTINE") && list.contains("mixed.cpp"),
        "{list}{}",
        stderr(&o)
    );
}

#[test]
fn pprof_gives_off_cpu_time_a_sample_type_of_its_own() {
    let data = scratch("pprof_offcpu").join("perf.data");
    let o = run(rperf().args(["record", "--trace-offcpu", "-o"]).arg(&data).arg(&programs().offcpu));
    assert!(o.status.success(), "{}", stderr(&o));
    let (mut on, mut off) = (0u64, 0u64);
    for l in String::from_utf8(report(&data, &["--format", "json"])).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let w = v["period"].as_u64().unwrap();
        if v["off_cpu"] == true {
            off += w
        } else {
            on += w
        }
    }
    assert!(on > 0 && off > 0, "{on} {off}");
    let profile = data.with_file_name("profile.pb.gz");
    report(&data, &["-o", profile.to_str().unwrap()]);
    let (types, samples, _, _) = pprof_raw(&profile);
    assert_eq!(types, ["samples", "wall", "cpu", "off-cpu"]);
    let sum = |k: usize| samples.iter().map(|s| s[k]).sum::<u64>();
    assert_eq!((sum(1), sum(2), sum(3)), (on + off, on, off));
    // Apart, each section is the time of its own kind.
    report(&data, &["-o", profile.to_str().unwrap(), "--trace-offcpu", "on-off-cpu"]);
    let (types, samples, _, _) = pprof_raw(&profile);
    assert_eq!(types, ["samples", "cpu", "samples", "off-cpu"]);
    assert_eq!(samples.iter().map(|s| s[3]).sum::<u64>(), off);
}

#[test]
fn a_planned_stop_ends_the_command_says_so_and_exits_0() {
    let data = scratch("planned_stop").join("perf.data");
    let record = |extra: &[&str]| {
        run(rperf()
            .args(["record", "--duration", "0.3", "-o"])
            .arg(&data)
            .args(extra)
            .args(["--", "sleep", "5"]))
    };
    let o = record(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--duration elapsed: the command sleep was stopped (signal 15)"),
        "{}",
        stderr(&o)
    );
    // simpleperf's option: the command's own code.
    let o = record(&["--use-cmd-exit-code"]);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    // A command that ends by itself still gives its code.
    let o = run(rperf().args(["record", "-o"]).arg(&data).args(["--", "sh", "-c", "exit 3"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// The rows of perf's `-x,` output, by event: its fields.
fn csv_fields(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    text.lines()
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .filter(|f| f.len() >= 5)
        .map(|f| (f[2].clone(), f))
        .collect()
}

#[test]
fn stat_csv_with_repeats_has_perfs_columns() {
    let events = "task-clock,page-faults";
    let o = run(Command::new("perf").args(["stat", "-r", "3", "-x,", "-e", events, "--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let theirs = csv_fields(&stderr(&o));
    let o = run(rperf().args(["stat", "-r", "3", "--csv", "-e", events, "--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = csv_fields(&(stdout(&o) + &stderr(&o)));
    for ev in ["task-clock", "page-faults"] {
        let (a, b) = (&ours[ev], &theirs[ev]);
        assert_eq!(a.len(), b.len(), "{ev}: rperf {a:?}, perf {b:?}");
        // The fourth field: the relative standard deviation over the runs.
        assert!(a[3].ends_with('%') && b[3].ends_with('%'), "{ev}: rperf {a:?}, perf {b:?}");
        assert_eq!(a[1], b[1], "{ev}: unit");
    }
}

#[test]
fn filters_that_match_nothing_say_so_and_write_no_file() {
    let data = record("cons_filters", &[]);
    let dir = scratch("cons_filters_out");
    let svg = dir.join("nothing.svg");
    // A regular file already there stays as it was: the report is not written over it.
    std::fs::write(&svg, "kept").unwrap();
    let o = run(rperf()
        .args(["report", "--comms", "phasse", "--symbols", "func_alpah", "-o"])
        .arg(&svg)
        .arg("-i")
        .arg(&data));
    let err = stderr(&o);
    assert!(!o.status.success(), "an empty report is an error");
    assert!(err.contains("--comms phasse matches nothing: threads with samples are named: phases"), "{err}");
    assert!(
        err.contains("--symbols func_alpah matches nothing: functions with samples: func_alpha,"),
        "{err}"
    );
    assert!(err.contains("no report was written"), "{err}");
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "kept");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no file left beside it");
    // A function that is only ever a caller: --children is what counts it. Which one is, the
    // recording says (a sample may land in `__libc_start_call_main` itself, as it exits).
    let folded = stdout(&run(rperf().args(["report", "--format", "folded", "-i"]).arg(&data)));
    let stacks: Vec<Vec<&str>> =
        folded.lines().filter_map(|l| Some(l.rsplit_once(' ')?.0.split(';').skip(1).collect())).collect();
    let leaves: std::collections::HashSet<&str> = stacks.iter().filter_map(|s| s.last().copied()).collect();
    let mut callers = stacks.iter().flat_map(|s| s[..s.len().saturating_sub(1)].iter().copied());
    let caller = callers.find(|f| !leaves.contains(f)).expect("a function only ever a caller");
    let o = run(rperf().args(["report", "--symbols", caller, "-i"]).arg(&data));
    assert!(!o.status.success() && stderr(&o).contains("add --children"), "{}", stderr(&o));
    // A time window past the end names the recording's span.
    let o = run(rperf().args(["report", "--time", "30,40", "-i"]).arg(&data));
    assert!(!o.status.success() && stderr(&o).contains("the samples span 0.000 to 1."), "{}", stderr(&o));
    // A value that matches nothing beside one that matches is a warning; the report is written.
    let o = run(rperf()
        .args(["report", "--sort", "comm", "--comms", "nosuch,phases", "-o"])
        .arg(&svg)
        .arg("-i")
        .arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning: --comms nosuch matches nothing"), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("func_alpha"));
}

#[test]
fn perfs_spellings_work_or_name_rperfs_option() {
    let data = record_fp("cons_spellings", &programs().overload, &["1"]);
    let perf_style = report(&data, &["--stdio", "-s", "dso,symbol"]);
    assert_eq!(perf_style, report(&data, &["--sort", "dso,symbol"]));
    // --no-demangle: names as the binary stores them, as perf prints them.
    let text = String::from_utf8(report(&data, &["--no-demangle", "-s", "symbol"])).unwrap();
    let perf_text = perf(&["report", "--stdio", "--no-demangle", "-s", "sym"], &data);
    for name in ["_ZN4work4spinEl", "_ZN4work4spinEd"] {
        assert!(perf_text.contains(name), "perf names {name}:\n{perf_text}");
        assert!(text.contains(name), "{text}");
    }
    assert!(!text.contains("work::spin"), "{text}");
    let o = run(rperf().args(["report", "--vmlinux", "/boot/vmlinux", "-i"]).arg(&data));
    assert!(!o.status.success() && stderr(&o).contains("--kallsyms FILE"), "{}", stderr(&o));
    let o = run(rperf().args(["report", "--stdio", "--format", "svg", "-i"]).arg(&data));
    assert!(!o.status.success() && stderr(&o).contains("--stdio asks for the text report"), "{}", stderr(&o));
}

/// Sum of the counts of folded lines that hold a frame starting with `name`.
fn folded_weight(folded: &str, name: &str) -> u64 {
    folded
        .lines()
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(stack, _)| stack.split(';').any(|f| f.starts_with(name)))
        .map(|(_, n)| n.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn inferno_collapses_the_script_output_with_off_cpu_time() {
    use inferno::collapse::Collapse;
    let data = scratch("cons_inferno").join("perf.data");
    let o =
        run(rperf().args(["record", "-g", "fp", "--trace-offcpu", "-o"]).arg(&data).arg(&programs().offcpu));
    assert!(o.status.success(), "{}", stderr(&o));
    let script = report(&data, &["--format", "script"]);
    // `-o NAME.script` gives the same text, and --help lists the format.
    let file = data.with_file_name("out.script");
    report(&data, &["-o", file.to_str().unwrap()]);
    assert!(std::fs::read(&file).unwrap() == script, "-o x.script writes perf script's text");
    let help = stdout(&run(rperf().args(["report", "--help"])));
    assert!(help.contains("script (perf script's text)") && help.contains(".script"), "{help}");
    let mut collapsed = Vec::new();
    let options = inferno::collapse::perf::Options::default();
    inferno::collapse::perf::Folder::from(options).collapse(&script[..], &mut collapsed).unwrap();
    let theirs = String::from_utf8(collapsed).unwrap();
    let ours = String::from_utf8(report(&data, &["--format", "folded"])).unwrap();
    // Every sample is read with its weight (time in ns), none dropped as a weird event line.
    let total = |t: &str| t.lines().filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok()).sum::<u64>();
    assert_eq!(total(&theirs), total(&ours));
    assert!(total(&ours) > 1_000_000_000, "the run's time in ns: {}", total(&ours));
    for f in ["spin_work", "clock_nanosleep", "schedule", "[off-cpu]"] {
        let w = folded_weight(&ours, f);
        assert!(w > 0, "no time in {f}:\n{ours}");
        assert_eq!(folded_weight(&theirs, f), w, "{f}");
    }
}

#[test]
fn the_idle_task_is_swapper_as_perf_and_simpleperf_name_it() {
    // A system-wide recording made here: whatever samples the idle task took are named as perf
    // names them (perf reads the same file).
    let data = scratch("cons_swapper").join("perf.data");
    let o = run(rperf().args(["record", "-a", "--duration", "1", "-o"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = String::from_utf8(report(&data, &["--sort", "pid,comm"])).unwrap();
    let theirs = perf(&["report", "--stdio", "--sort", "pid,comm"], &data);
    let idle =
        |t: &str, pid0: &str| t.lines().filter(|l| l.contains(pid0)).map(str::to_string).collect::<Vec<_>>();
    let perf_idle = idle(&theirs, " 0:swapper");
    let our_idle: Vec<String> =
        idle(&ours, " swapper").into_iter().filter(|l| l.split_whitespace().nth(1) == Some("0")).collect();
    assert_eq!(perf_idle.is_empty(), our_idle.is_empty(), "perf:\n{theirs}\nrperf:\n{ours}");
    assert!(!ours.contains(":0 ") && !ours.lines().any(|l| l.ends_with(" :0")), "{ours}");
    // A perf-made system-wide recording with the idle task in 92% of its samples: rperf's row
    // is simpleperf's.
    let file = simpleperf_testdata().join("generated_by_linux_perf.data");
    let ours = String::from_utf8(report(&file, &["--sort", "comm,pid"])).unwrap();
    assert!(
        ours.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["92.42%", "swapper", "0"]),
        "{ours}"
    );
}
