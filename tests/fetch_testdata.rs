//! scripts/fetch-testdata.sh: on a machine without ../shared, the test command fetches
//! simpleperf's recordings from their upstream repository at a pinned commit and checks them
//! against tests/simpleperf-testdata.sha256. A local git repository stands in for upstream.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let o = run(Command::new("git")
        .args(["-c", "user.email=test@rperf", "-c", "user.name=test"])
        .args(args)
        .current_dir(dir));
    assert!(o.status.success(), "git {args:?}: {}", stderr(&o));
    stdout(&o).trim().to_string()
}

/// An upstream repository holding the recordings under simpleperf/testdata, and a copy of the
/// project's script and checksums in a folder with no ../shared beside it.
fn setup(name: &str) -> (PathBuf, PathBuf, String) {
    let dir = scratch(name);
    let up = dir.join("upstream");
    let data = up.join("simpleperf/testdata");
    std::fs::create_dir_all(&data).unwrap();
    let shared = simpleperf_testdata();
    let o = run(Command::new("cp").arg("-r").arg(format!("{}/.", shared.display())).arg(&data));
    assert!(o.status.success());
    git(&up, &["init", "-q"]);
    git(&up, &["add", "-A"]);
    git(&up, &["commit", "-qm", "simpleperf test data"]);
    let commit = git(&up, &["rev-parse", "HEAD"]);
    let proj = dir.join("project");
    std::fs::create_dir_all(proj.join("scripts")).unwrap();
    std::fs::create_dir_all(proj.join("tests")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(root.join("scripts/fetch-testdata.sh"), proj.join("scripts/fetch-testdata.sh")).unwrap();
    std::fs::copy(
        root.join("tests/simpleperf-testdata.sha256"),
        proj.join("tests/simpleperf-testdata.sha256"),
    )
    .unwrap();
    (up, proj, commit)
}

fn fetch(proj: &Path, up: &Path, commit: &str) -> std::process::Output {
    run(Command::new(proj.join("scripts/fetch-testdata.sh"))
        .env_remove("RPERF_SIMPLEPERF_TESTDATA")
        .env("RPERF_TESTDATA_REPO", up)
        .env("RPERF_TESTDATA_COMMIT", commit))
}

#[test]
fn recordings_are_fetched_at_the_pinned_commit_and_checked() {
    let (up, proj, commit) = setup("fetch_ok");
    assert!(!proj.join("../shared").exists());
    let o = fetch(&proj, &up, &commit);
    assert!(o.status.success(), "{}", stderr(&o));
    let dest = PathBuf::from(stdout(&o).trim());
    assert_eq!(dest, proj.join("target/simpleperf-testdata"));
    // What the tests read there reports as simpleperf's own tests expect.
    let o = run(rperf().arg("report").arg("-i").arg(dest.join("perf.data")).arg("--symfs").arg(&dest));
    assert!(stdout(&o).contains("Samples: 2409"), "{}", stdout(&o));
    // A second run finds them in place.
    let o = fetch(&proj, &up, "no-such-commit");
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_changed_upstream_file_is_refused_by_name() {
    let (up, proj, _) = setup("fetch_changed");
    std::fs::write(up.join("simpleperf/testdata/perf_g_fp.data"), b"not the recording").unwrap();
    git(&up, &["commit", "-qam", "changed"]);
    let changed = git(&up, &["rev-parse", "HEAD"]);
    let o = fetch(&proj, &up, &changed);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("perf_g_fp.data: FAILED"), "{}", stderr(&o));
    assert!(!proj.join("target/simpleperf-testdata").exists(), "nothing unchecked is left behind");
    let o = fetch(&proj, &up, "0123456789abcdef0123456789abcdef01234567");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot fetch") && stderr(&o).contains("RPERF_SIMPLEPERF_TESTDATA"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_abbreviated_pin_is_found_in_history_and_only_the_listed_files_come() {
    let (up, proj, pinned) = setup("fetch_short");
    // Upstream moves on past the pinned commit: a changed recording, a new file.
    std::fs::write(up.join("simpleperf/testdata/perf_g_fp.data"), b"changed later").unwrap();
    std::fs::write(up.join("simpleperf/testdata/unused.data"), b"not used by the tests").unwrap();
    git(&up, &["add", "-A"]);
    git(&up, &["commit", "-qm", "later"]);
    let o = fetch(&proj, &up, &pinned[..8]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dest = PathBuf::from(stdout(&o).trim());
    let listed = std::fs::read_to_string(proj.join("tests/simpleperf-testdata.sha256")).unwrap();
    let mut files = Vec::new();
    let mut stack = vec![dest.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != ".complete" {
                files.push(p);
            }
        }
    }
    assert_eq!(files.len(), listed.lines().count(), "exactly the files the tests use");
    assert!(!dest.join("unused.data").exists());
    // An abbreviated hash that is not in the history says so.
    std::fs::remove_dir_all(&dest).unwrap();
    let o = fetch(&proj, &up, "abcdef12");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not in the history"), "{}", stderr(&o));
}
