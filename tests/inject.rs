//! `rperf inject`: ETM instruction trace into AutoFDO's text input, held byte for byte to
//! `simpleperf inject` on simpleperf's ETM recordings (a program's trace, and trace through a
//! kernel module).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// What `command` (an `inject` with its inputs) writes to `out`, with the binaries under
/// `symdir`.
fn inject(command: &mut Command, out: &Path, symdir: &Path) -> String {
    let o = run(command.arg("--symdir").arg(symdir).arg("-o").arg(out));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(out).unwrap()
}

/// `tool inject -i recording`.
fn inject_one(tool: &mut Command, recording: &Path, symdir: &Path, out: &Path) -> String {
    inject(tool.arg("inject").arg("-i").arg(recording), out, symdir)
}

#[test]
fn autofdo_text_is_simpleperfs() {
    let dir = scratch("inject_autofdo");
    let etm = simpleperf_testdata().join("etm");
    for file in ["perf_etm.data", "perf_kernel.data"] {
        let ours = inject_one(&mut rperf(), &etm.join(file), &etm, &dir.join("rperf.txt"));
        let theirs =
            inject_one(&mut Command::new(simpleperf()), &etm.join(file), &etm, &dir.join("simpleperf.txt"));
        assert!(ours.lines().count() > 10, "{file}:\n{ours}");
        assert_eq!(ours, theirs, "{file}");
    }
    // Several recordings (comma-separated, and `@FILE` lists) add up, as in simpleperf.
    let both = format!("{},{}", etm.join("perf_etm.data").display(), etm.join("perf_kernel.data").display());
    let list = dir.join("list.txt");
    std::fs::write(&list, format!("{}\n", etm.join("perf_etm.data").display())).unwrap();
    let listed = format!("@{},{}", list.display(), etm.join("perf_etm.data").display());
    for inputs in [both, listed] {
        let mut ours = rperf();
        let mut theirs = Command::new(simpleperf());
        let ours = inject(ours.args(["inject", "-i", &inputs]), &dir.join("rperf.txt"), &etm);
        let theirs = inject(theirs.args(["inject", "-i", &inputs]), &dir.join("simpleperf.txt"), &etm);
        assert_eq!(ours, theirs, "{inputs}");
    }
    // The corpus's own expectation for the program's trace.
    let expected = std::fs::read_to_string(etm.join("perf_inject.data")).unwrap();
    assert_eq!(inject_one(&mut rperf(), &etm.join("perf_etm.data"), &etm, &dir.join("again.txt")), expected);
}

#[test]
fn what_cannot_be_injected_is_said() {
    let dir = scratch("inject_refused");
    let etm = simpleperf_testdata().join("etm");
    let out = dir.join("out.txt");
    // A recording without ETM trace.
    let o =
        run(rperf().args(["inject", "-o"]).arg(&out).arg("-i").arg(simpleperf_testdata().join("perf.data")));
    assert!(!o.status.success() && stderr(&o).contains("holds no ETM trace"), "{}", stderr(&o));
    // The branch-list format is not written.
    let o = run(rperf()
        .args(["inject", "--output", "branch-list", "-i"])
        .arg(etm.join("perf_etm.data"))
        .arg("-o")
        .arg(&out));
    assert!(!o.status.success() && stderr(&o).contains("`autofdo` text format only"), "{}", stderr(&o));
    // Without the binaries nothing can be decoded: said, with the remedy.
    let o = run(rperf().args(["inject", "-i"]).arg(etm.join("perf_etm.data")).arg("-o").arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--symdir"), "{}", stderr(&o));
    // A --binary filter that keeps nothing says so.
    let o = run(rperf()
        .args(["inject", "--binary", "no_such_binary", "--symdir"])
        .arg(&etm)
        .arg("-i")
        .arg(etm.join("perf_etm.data"))
        .arg("-o")
        .arg(&out));
    assert!(stderr(&o).contains("matches --binary no_such_binary"), "{}", stderr(&o));
    // Trace the file lacks.
    let o = run(rperf()
        .args(["inject", "--symdir"])
        .arg(&etm)
        .arg("-i")
        .arg(etm.join("perf_with_missing_aux_data.data"))
        .arg("-o")
        .arg(&out));
    assert!(stderr(&o).contains("point at trace the file lacks"), "{}", stderr(&o));
}
