//! Golden outputs: small recordings checked in under `tests/golden/` (of `loop`, a program
//! without libc, checked in beside them) and their expected reports. Any change to what a
//! report says about them shows here as a diff. `RPERF_BLESS=1 cargo test --test golden`
//! rewrites the expectations after a deliberate change.

mod common;

use std::path::Path;

use common::*;

/// (recording, report arguments, expected output).
const CASES: &[(&str, &[&str], &str)] = &[
    ("fp.data", &[], "fp.txt"),
    ("fp.data", &["--children", "--sort", "symbol", "-g", "caller"], "fp_children.txt"),
    ("fp.data", &["--format", "folded"], "fp.folded"),
    ("dwarf.data", &["--sort", "dso,symbol", "-n"], "dwarf.txt"),
    ("dwarf.data", &["--format", "folded", "--prefix", "tid"], "dwarf.folded"),
];

#[test]
fn reports_match_their_golden_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("RPERF_BLESS").is_some();
    for (data, args, expected) in CASES {
        let o = run(rperf().arg("report").arg("-i").arg(dir.join(data)).arg("--symfs").arg(&dir).args(*args));
        assert!(o.status.success(), "{data} {args:?}: {}", stderr(&o));
        let got = stdout(&o);
        let path = dir.join(expected);
        if bless {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(got, want, "{data} {args:?} differs from {expected} (RPERF_BLESS=1 rewrites it)");
    }
}
