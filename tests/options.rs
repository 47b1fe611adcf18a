//! Bad options: each gets a clear error and a non-zero exit (never a panic, exit 101), and an
//! unknown option is never run as the command.

mod common;

use common::*;

/// Runs rperf with `args`; asserts it failed cleanly with a message holding `says`.
fn refused(args: &[&str], says: &str) {
    let o = run(rperf().args(args));
    let code = o.status.code();
    assert!(code == Some(1) || code == Some(2), "{args:?}: exit {code:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
}

#[test]
fn unknown_options_are_errors_not_commands() {
    let dir = scratch("opt_unknown");
    let marker = dir.join("ran");
    // Were `--durration` taken as the command, the shell would create the marker.
    let script = format!("touch {}", marker.display());
    refused(
        &["record", "--durration", "1", "--", "sh", "-c", &script],
        "a similar argument exists: '--duration'",
    );
    refused(&["stat", "--durration", "1", "--", "sh", "-c", &script], "--duration");
    assert!(!marker.exists());
    // Options of the command itself still go to it.
    let data = dir.join("perf.data");
    let o = run(rperf().args(["record", "-o", data.to_str().unwrap(), "sh", "-c", &script, "--foo"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(marker.exists());
}

#[test]
fn values_that_make_no_sense_are_refused() {
    for cmd in ["record", "stat"] {
        for d in ["-1", "0", "nan", "inf", "1e30"] {
            refused(&[cmd, "--duration", d, "--", "true"], "--duration");
        }
        refused(&[cmd, "-e", "", "--", "true"], "names no event");
        refused(&[cmd, "-e", ",,,", "--", "true"], "names no event");
        refused(&[cmd, "-e", "cpu-clock:x", "--", "true"], "unknown modifier 'x'");
        refused(&[cmd, "--cpu", "99", "-a", "--duration", "0.1"], "CPU 99 is not online");
        refused(&[cmd, "--cpu", "5-2", "-a", "--duration", "0.1"], "5-2");
    }
    refused(&["record", "-m", "3", "--", "true"], "not a power of two");
    refused(&["record", "-m", "0", "--", "true"], "not a power of two");
    let data = record_fp("opt_report_src", &programs().workload_fp, &["0.1", "1"]);
    refused(&["report", "--cpu", "5-2", "-i", data.to_str().unwrap()], "5-2");
    // A window that ends before it starts, and limits that are not percentages, once gave
    // empty or odd reports.
    for cmd in ["report", "annotate"] {
        for t in ["5,2", "2,2", "900ns,100ns"] {
            refused(&[cmd, "--time", t, "-i", data.to_str().unwrap()], "END after START");
        }
    }
    for p in ["nan", "-5", "inf", "101", "x"] {
        refused(&["report", "--percent-limit", p, "-i", data.to_str().unwrap()], "from 0 to 100");
    }
}

/// `-g` alone means DWARF call graphs for `rperf record` only: a file named `record` given to
/// `report` once made its `-g` into `--call-graph`, which report refused.
#[test]
fn short_g_is_rewritten_for_record_only() {
    let data = record_fp("opt_short_g_src", &programs().workload_fp, &["0.1", "1"]);
    let dir = data.parent().unwrap();
    std::fs::copy(&data, dir.join("record")).unwrap();
    let o = run(rperf().current_dir(dir).args(["report", "-i", "record", "-g"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("hot_loop"), "{}", stdout(&o));
    let out = dir.join("dwarf.data");
    let o = run(rperf().args(["record", "-g", "-o"]).arg(&out).args(["--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&run(rperf().args(["dump", "-i"]).arg(&out))).contains("--call-graph=dwarf"));
}
