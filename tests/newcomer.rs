//! What a newcomer runs first, from README: the demo script records the bundled workload,
//! prints the report's table whole (the hot function in it) and writes the files it names.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

#[test]
fn the_demo_records_reports_and_writes_what_it_says() {
    let out = scratch("newcomer_demo");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let o = run(Command::new(root.join("scripts/demo.sh"))
        .env("RPERF", env!("CARGO_BIN_EXE_rperf"))
        .env("DEMO_OUT", &out));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // The table is printed whole: its header, the hot function, and nothing cut after it.
    let table: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("Overhead")).take_while(|l| !l.is_empty()).collect();
    assert!(table.iter().any(|l| l.ends_with(" hot_loop")), "{text}");
    assert!(text.contains("Samples: "), "{text}");
    for f in ["perf.data", "callgraph.txt", "flamegraph.svg", "stacks.folded", "report.html", "cpu.pb.gz"] {
        let p = out.join(f);
        assert!(p.metadata().is_ok_and(|m| m.len() > 0), "{f} missing: {text}");
        assert!(text.contains(f), "the demo names {f}: {text}");
    }
    let graph = std::fs::read_to_string(out.join("callgraph.txt")).unwrap();
    assert!(graph.contains("compute_inner"), "{graph}");
}
