//! `rperf dump`: every header field, feature section and record of a recording, decoded, for
//! debugging recordings (simpleperf's `dump`, perf's `report -D`).

use std::io::Write;
use std::path::Path;

use linux_perf_data::PerfFileRecord;

use crate::Error;

/// Writes the dump of `path` to `out`.
pub fn dump(path: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Open { path: path.to_path_buf(), source: e };
    let (perf_file, mut records, reading, repairs) = crate::load::open_reader(path)?;
    let w = &mut *out;
    writeln!(w, "file: {}", path.display()).map_err(io)?;
    for r in &repairs {
        writeln!(w, "repaired: {r}").map_err(io)?;
    }
    writeln!(w, "hostname: {:?}", perf_file.hostname().ok().flatten()).map_err(io)?;
    writeln!(w, "os release: {:?}", perf_file.os_release().ok().flatten()).map_err(io)?;
    writeln!(w, "version: {:?}", perf_file.perf_version().ok().flatten()).map_err(io)?;
    writeln!(w, "arch: {:?}", perf_file.arch().ok().flatten()).map_err(io)?;
    writeln!(w, "nr cpus: {:?}", perf_file.nr_cpus().ok().flatten()).map_err(io)?;
    writeln!(w, "cpu desc: {:?}", perf_file.cpu_desc().ok().flatten()).map_err(io)?;
    writeln!(w, "total mem: {:?}", perf_file.total_mem().ok().flatten()).map_err(io)?;
    writeln!(w, "cmdline: {:?}", perf_file.cmdline().ok().flatten()).map_err(io)?;
    writeln!(w, "features:").map_err(io)?;
    for f in perf_file.features().iter() {
        let size = perf_file.feature_section_data(f).map_or(0, <[u8]>::len);
        match rperf_perfdata::feature::rperf_name(f.0) {
            Some(name) => writeln!(w, "  rperf {name} (feature {}): {size} bytes", f.0),
            None => writeln!(w, "  {f:?}: {size} bytes"),
        }
        .map_err(io)?;
    }
    if let Ok(ids) = perf_file.build_ids() {
        writeln!(w, "build ids:").map_err(io)?;
        for info in ids.values() {
            let id: String = info.build_id.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(w, "  {id} {}", String::from_utf8_lossy(&info.path)).map_err(io)?;
        }
    }
    if let Ok(Some(meta)) = perf_file.simpleperf_meta_info() {
        writeln!(w, "simpleperf meta info: {meta:?}").map_err(io)?;
    }
    if let Ok(Some(files)) = perf_file.simpleperf_symbol_tables() {
        writeln!(w, "stored symbol files:").map_err(io)?;
        for f in &files {
            writeln!(
                w,
                "  {} ({}, {} symbols, min vaddr {:#x})",
                crate::escape::printable(&f.path),
                stored_type_name(f.r#type),
                f.symbol.len(),
                f.min_vaddr
            )
            .map_err(io)?;
        }
    }
    if let Some(d) =
        perf_file.feature_section_data(linux_perf_data::Feature(rperf_perfdata::feature::RPERF_INFO))
    {
        writeln!(w, "recording info:").map_err(io)?;
        for line in String::from_utf8_lossy(d).lines() {
            writeln!(w, "  {}", crate::escape::printable(line)).map_err(io)?;
        }
    }
    let symfiles = perf_file
        .feature_section_data(linux_perf_data::Feature(rperf_perfdata::feature::RPERF_JIT_SYMFILES))
        .map(rperf_perfdata::sections::decode_jit_symfiles)
        .unwrap_or_default();
    if !symfiles.is_empty() {
        writeln!(w, "JIT symbol files (GDB JIT interface):").map_err(io)?;
        for f in &symfiles {
            writeln!(w, "  {}", crate::jit::describe_symfile(f)).map_err(io)?;
        }
    }
    writeln!(w, "events:").map_err(io)?;
    for (i, a) in perf_file.event_attributes().iter().enumerate() {
        writeln!(w, "  [{i}] {:?} ids {:?}: {:?}", a.name(), a.event_ids, a.attr).map_err(io)?;
    }
    writeln!(w, "records:").map_err(io)?;
    let mut n = 0u64;
    let mut patched = Vec::new();
    loop {
        let batch = records.next_batch();
        for record in batch.records() {
            match record {
                PerfFileRecord::EventRecord { attr_index, record } => {
                    let kind = record.record_type;
                    // The same decoding as the report's: records the parser would panic on are
                    // refused (a fuzzer find, in tests/fuzz-regressions).
                    match crate::decode::parse(&record, &mut patched) {
                        Some(r) => writeln!(w, "{n} [event {attr_index}] {kind:?} {r:?}"),
                        None => writeln!(w, "{n} [event {attr_index}] {kind:?} undecodable"),
                    }
                }
                PerfFileRecord::UserRecord(r) => {
                    let kind = r.record_type;
                    match r.parse() {
                        Ok(p) => writeln!(w, "{n} [user] {kind:?} {p:?}"),
                        Err(e) => writeln!(w, "{n} [user] {kind:?} undecodable: {e}"),
                    }
                }
            }
            .map_err(io)?;
            n += 1;
        }
        match batch.end {
            Some(Err(e)) => {
                writeln!(w, "stopped after {n} records: {e}").map_err(io)?;
                break;
            }
            Some(Ok(())) => break,
            None => {}
        }
    }
    writeln!(w, "{n} records").map_err(io)?;
    for r in reading.take_repairs() {
        writeln!(w, "repaired: {r}").map_err(io)?;
    }
    Ok(())
}

/// simpleperf's name of a stored file's type.
fn stored_type_name(t: u32) -> &'static str {
    use linux_perf_data::simpleperf_dso_type::*;
    match t {
        DSO_KERNEL => "kernel",
        DSO_KERNEL_MODULE => "kernel module",
        DSO_ELF_FILE => "ELF file",
        DSO_DEX_FILE => "dex file",
        DSO_SYMBOL_MAP_FILE => "symbol map",
        _ => "unknown file",
    }
}
