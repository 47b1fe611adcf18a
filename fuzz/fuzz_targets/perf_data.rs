//! Fuzzes rperf's perf.data reader: any input must give a report or an error, never a panic,
//! a hang or an allocation sized by an untrusted field.
//!
//! cargo +nightly fuzz run perf_data -- -max_len=65536 -rss_limit_mb=1024 -timeout=10
//! (seed the corpus with small recordings, e.g. `rperf record -o fuzz/corpus/perf_data/a -- true`)
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    // The reader takes a path: each input goes through a file in memory-backed /dev/shm.
    let path = std::path::PathBuf::from(format!("/dev/shm/rperf-fuzz-{}.data", std::process::id()));
    std::fs::File::create(&path).and_then(|mut f| f.write_all(data)).expect("writing the input");
    let opts = rperf_report::ReportOptions {
        input: path.clone(),
        call_graph: Some(rperf_report::CallOrder::Caller),
        inline: false,
        ..Default::default()
    };
    if let Ok(profile) = rperf_report::load(&opts) {
        let _ = profile.write(&mut std::io::sink(), &opts, None);
    }
});
