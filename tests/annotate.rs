//! `rperf annotate` against `perf annotate --stdio` on the same recording, and its HTML page.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// `perf annotate`'s "Sorted summary" of source lines: percent per `file:line`.
fn perf_lines(data: &Path, symbol: &str) -> Vec<(String, f64)> {
    let o = run(Command::new("perf").args(["annotate", "--stdio", "-l", "-i"]).arg(data).arg(symbol));
    assert!(o.status.success(), "perf annotate: {}", stderr(&o));
    let text = stdout(&o);
    text.lines()
        .skip_while(|l| !l.starts_with("Sorted summary"))
        .skip(2)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty() && !l.contains("Percent"))
        .filter_map(|l| {
            let (pct, line) = l.trim().split_once(' ')?;
            Some((line.trim().to_string(), pct.parse().ok()?))
        })
        .collect()
}

/// rperf's summary: percent per `file:line`.
fn rperf_lines(text: &str) -> HashMap<String, f64> {
    text.lines()
        .skip_while(|l| !l.starts_with("Sorted summary"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let pct = it.next()?.parse().ok()?;
            Some((it.next()?.to_string(), pct))
        })
        .collect()
}

/// rperf's instruction table summed by source line as perf sums its summary: perf leaves out
/// instructions of 0.5% or less (`annotation__calc_lines`), which rperf's summary counts. Each
/// line's sum comes with how many rounded figures went into it.
fn rperf_lines_as_perf_sums_them(text: &str) -> HashMap<String, (f64, u32)> {
    let mut out = HashMap::new();
    let mut line = String::new();
    for l in text.lines().skip_while(|l| !l.trim_start().starts_with("Self")).skip(1) {
        let mut it = l.split_whitespace();
        let Some(first) = it.next() else { continue };
        match first.parse::<f64>() {
            Ok(pct) if pct > 0.5 => {
                let sum = out.entry(line.clone()).or_insert((0.0, 0));
                *sum = (sum.0 + pct, sum.1 + 1);
            }
            Ok(_) => {}
            Err(_) => line = first.to_string(), // a source line header: `file:line ...`
        }
    }
    out
}

#[test]
fn source_lines_agree_with_perf_annotate() {
    let p = programs();
    let dir = scratch("annotate_perf");
    let data = dir.join("perf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.inline_cpp)
        .arg("1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let theirs = perf_lines(&data, "outer_caller");
    assert!(!theirs.is_empty());
    let o = run(rperf().args(["annotate", "--symbols", "outer_caller", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let ours = rperf_lines(&text);
    let as_perf = rperf_lines_as_perf_sums_them(&text);
    for (line, pct) in theirs.iter().take(5) {
        let (mine, figures) = as_perf.get(line).copied().unwrap_or((0.0, 0));
        assert!((mine - pct).abs() <= 1.0, "{line}: perf {pct:.2}%, rperf {mine:.2}%\n{text}");
        // rperf's own summary counts every instruction of the line. Each figure printed is
        // rounded to 0.01, so their sum may pass the summary's by half of that per figure.
        let all = ours.get(line).copied().unwrap_or(0.0);
        let rounding = 0.005 * f64::from(figures + 1) + 1e-9;
        assert!(
            all >= mine - rounding,
            "{line}: summary {all:.2}% under its instructions' {mine:.2}%\n{text}"
        );
    }
    // The hot line is inlined code, and marked so; instructions carry their share.
    assert!(text.contains("(inlined inner_kernel)"), "{text}");
    assert!(text.contains("sqrtsd"), "{text}");
}

#[test]
fn html_page_and_binaries_that_are_missing() {
    let p = programs();
    let data = record_fp("annotate_html", &p.inline_cpp, &["1"]);
    let page = scratch("annotate_html_out").join("a.html");
    let o = run(rperf()
        .args(["annotate", "--format", "html", "--functions", "1", "-o"])
        .arg(&page)
        .arg("-i")
        .arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("outer_caller") && html.contains("sqrtsd"),
        "{html}"
    );
    assert!(html.contains("inline.cpp:12"), "{html}");
    // Without the binary, addresses only, and why.
    let moved = scratch("annotate_moved").join("report.data");
    std::fs::copy(&data, &moved).unwrap();
    let o = run(rperf().args(["annotate", "--functions", "1", "--symfs", "/nonexistent", "-i"]).arg(&moved));
    assert!(o.status.success());
}

/// A binary's DWARF may name any file as its source (`#line 1 "/etc/shadow"`, or a path
/// climbing out with `..`): with --source-dir, annotate reads only inside those folders, in
/// text and HTML; the real sources there are still shown.
#[test]
fn sources_outside_the_source_dir_are_not_read() {
    let dir = scratch("annotate_source_dir");
    let (src, outside, build) = (dir.join("src"), dir.join("outside"), dir.join("build"));
    for d in [&src, &outside, &build] {
        std::fs::create_dir_all(d).unwrap();
    }
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "TOPSECRET_ABSOLUTE\nTOPSECRET_ABSOLUTE\nTOPSECRET_ABSOLUTE\n").unwrap();
    let program = format!(
        "#line 1 \"{}\"\n\
         long spin(long n) {{ volatile long s = 0; for (long i = 0; i < n; i++) s += i; return s; }}\n\
         #line 1 \"../outside/secret.txt\"\n\
         long spin2(long n) {{ volatile long s = 0; for (long i = 0; i < n; i++) s += 2 * i; return s; }}\n\
         #line 1 \"prog.c\"\n\
         int main(void) {{ return (int)(spin(200000000) + spin2(200000000)); }} /* SHOWN_SOURCE */\n",
        secret.display()
    );
    std::fs::write(src.join("prog.c"), &program).unwrap();
    let exe = build.join("prog");
    let o = run(Command::new("gcc")
        .current_dir(&build)
        .args(["-g", "-O0", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(src.join("prog.c")));
    assert!(o.status.success(), "{}", stderr(&o));
    let data = record_fp("annotate_source_dir_rec", &exe, &[]);
    for format in ["text", "html"] {
        let out = dir.join(format!("out.{format}"));
        let o = run(rperf()
            .current_dir(&build)
            .args(["annotate", "--format", format, "--source-dir"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .arg("-i")
            .arg(&data));
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("spin"), "{text}");
        assert!(!text.contains("TOPSECRET"), "{format}: a file outside --source-dir was read:\n{text}");
    }
    // Without --source-dir, the files the binary names are this machine's own: they are read.
    let o = run(rperf().current_dir(&build).args(["annotate", "-i"]).arg(&data));
    assert!(stdout(&o).contains("TOPSECRET_ABSOLUTE"), "{}", stdout(&o));
    let page = dir.join("report.html");
    let o = run(rperf().current_dir(&build).arg("report").arg("-o").arg(&page).arg("-i").arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&page).unwrap().contains("TOPSECRET_ABSOLUTE"), "the HTML code panel");
    // ... when this user or root owns them: another user's file is not read, by annotate or
    // by the HTML report.
    std::os::unix::fs::chown(&secret, Some(65534), Some(65534)).unwrap();
    let o = run(rperf().current_dir(&build).args(["annotate", "-i"]).arg(&data));
    assert!(o.status.success() && !stdout(&o).contains("TOPSECRET"), "{}", stdout(&o));
    let o = run(rperf().current_dir(&build).arg("report").arg("-o").arg(&page).arg("-i").arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!std::fs::read_to_string(&page).unwrap().contains("TOPSECRET"), "another user's file was read");
}
