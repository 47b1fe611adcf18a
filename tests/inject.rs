//! `rperf inject`: ETM instruction trace into AutoFDO's text input, held byte for byte to
//! `simpleperf inject` on simpleperf's ETM recordings (a program's trace, and trace through a
//! kernel module).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// What `tool inject` writes for `recording`, with the binaries under `symdir`.
fn inject(tool: &mut Command, recording: &Path, symdir: &Path, out: &Path) -> String {
    let o = run(tool.arg("inject").arg("-i").arg(recording).arg("--symdir").arg(symdir).arg("-o").arg(out));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn autofdo_text_is_simpleperfs() {
    let dir = scratch("inject_autofdo");
    let etm = simpleperf_testdata().join("etm");
    for file in ["perf_etm.data", "perf_kernel.data"] {
        let ours = inject(&mut rperf(), &etm.join(file), &etm, &dir.join("rperf.txt"));
        let theirs =
            inject(&mut Command::new(simpleperf()), &etm.join(file), &etm, &dir.join("simpleperf.txt"));
        assert!(ours.lines().count() > 10, "{file}:\n{ours}");
        assert_eq!(ours, theirs, "{file}");
    }
    // The corpus's own expectation for the program's trace.
    let expected = std::fs::read_to_string(etm.join("perf_inject.data")).unwrap();
    assert_eq!(inject(&mut rperf(), &etm.join("perf_etm.data"), &etm, &dir.join("again.txt")), expected);
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
