//! Fuzzes rperf's perf.data reader and every output: any input must give `dump` output or an
//! error, and a report in every format or an error; never a panic, a hang or an allocation
//! sized by an untrusted field.
//!
//! cargo +nightly fuzz run -O perf_data -- -max_len=300000 -rss_limit_mb=2048 -timeout=10
//! (seed the corpus with small recordings, e.g. `rperf record -o fuzz/corpus/perf_data/a -- true`;
//! inputs that once failed are kept in `tests/fuzz-regressions/` and replayed by the tests)
#![no_main]

use libfuzzer_sys::fuzz_target;
use rperf_report::{Format, ReportOptions};
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    // The reader takes a path: each input goes through a file in memory-backed /dev/shm.
    let path = std::path::PathBuf::from(format!("/dev/shm/rperf-fuzz-{}.data", std::process::id()));
    std::fs::File::create(&path).and_then(|mut f| f.write_all(data)).expect("writing the input");
    let _ = rperf_report::dump(&path, &mut std::io::sink());
    // Loaded as for json, the profile keeps rows and lines, so every format can render it.
    let opts = ReportOptions {
        input: path.clone(),
        call_graph: Some(rperf_report::CallOrder::Caller),
        inline: false,
        format: Format::Json,
        ..Default::default()
    };
    if let Ok(profile) = rperf_report::load(&opts) {
        for format in [Format::Text, Format::Folded, Format::Svg, Format::Html, Format::Pprof, Format::Gecko, Format::Json] {
            let o = ReportOptions { format, ..opts.clone() };
            let _ = profile.write(&mut std::io::sink(), &o, None);
        }
        let diff = ReportOptions { format: Format::Text, ..opts.clone() };
        let _ = profile.write(&mut std::io::sink(), &diff, Some(&profile));
    }
});
