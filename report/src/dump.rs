//! `rperf dump`: every header field, feature section and record of a recording, decoded, for
//! debugging recordings (simpleperf's `dump`, perf's `report -D`).

use std::io::Write;
use std::path::Path;

use linux_perf_data::PerfFileRecord;

use crate::Error;

/// Writes the dump of `path` to `out`.
pub fn dump(path: &Path, out: &mut dyn Write) -> Result<(), Error> {
    let io = |e: std::io::Error| Error::Open { path: path.to_path_buf(), source: e };
    let crate::load::Opened { perf_file, mut records, reading, warnings: repairs, .. } =
        crate::load::open_reader(path)?;
    let w = &mut *out;
    writeln!(w, "file: {}", path.display()).map_err(io)?;
    for r in &repairs {
        writeln!(w, "repaired: {r}").map_err(io)?;
    }
    write_metadata(w, &perf_file).map_err(io)?;
    writeln!(w, "records:").map_err(io)?;
    let n = write_records(w, &mut records).map_err(io)?;
    writeln!(w, "{n} records").map_err(io)?;
    for r in reading.take_repairs() {
        writeln!(w, "repaired: {r}").map_err(io)?;
    }
    Ok(())
}

/// The header's metadata, feature sections, build ids, stored symbols, rperf's sections and
/// the events.
fn write_metadata(w: &mut dyn Write, perf_file: &linux_perf_data::PerfFile) -> std::io::Result<()> {
    writeln!(w, "hostname: {:?}", perf_file.hostname().ok().flatten())?;
    writeln!(w, "os release: {:?}", perf_file.os_release().ok().flatten())?;
    writeln!(w, "version: {:?}", perf_file.perf_version().ok().flatten())?;
    writeln!(w, "arch: {:?}", perf_file.arch().ok().flatten())?;
    writeln!(w, "nr cpus: {:?}", perf_file.nr_cpus().ok().flatten())?;
    writeln!(w, "cpu desc: {:?}", perf_file.cpu_desc().ok().flatten())?;
    writeln!(w, "total mem: {:?}", perf_file.total_mem().ok().flatten())?;
    writeln!(w, "cmdline: {:?}", perf_file.cmdline().ok().flatten())?;
    writeln!(w, "features:")?;
    for f in perf_file.features().iter() {
        let size = perf_file.feature_section_data(f).map_or(0, <[u8]>::len);
        match rperf_perfdata::feature::rperf_name(f.0) {
            Some(name) => writeln!(w, "  rperf {name} (feature {}): {size} bytes", f.0),
            None => writeln!(w, "  {f:?}: {size} bytes"),
        }?;
    }
    if let Ok(ids) = perf_file.build_ids() {
        writeln!(w, "build ids:")?;
        for info in ids.values() {
            let id: String = info.build_id.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(w, "  {id} {}", String::from_utf8_lossy(&info.path))?;
        }
    }
    if let Ok(Some(meta)) = perf_file.simpleperf_meta_info() {
        writeln!(w, "simpleperf meta info: {meta:?}")?;
    }
    if let Ok(Some(files)) = perf_file.simpleperf_symbol_tables() {
        writeln!(w, "stored symbol files:")?;
        for f in &files {
            writeln!(
                w,
                "  {} ({}, {} symbols, min vaddr {:#x})",
                crate::escape::printable(&f.path),
                stored_type_name(f.r#type),
                f.symbol.len(),
                f.min_vaddr
            )?;
        }
    }
    if let Some(d) =
        perf_file.feature_section_data(linux_perf_data::Feature(rperf_perfdata::feature::RPERF_INFO))
    {
        writeln!(w, "recording info:")?;
        for line in String::from_utf8_lossy(d).lines() {
            writeln!(w, "  {}", crate::escape::printable(line))?;
        }
    }
    let symfiles = perf_file
        .feature_section_data(linux_perf_data::Feature(rperf_perfdata::feature::RPERF_JIT_SYMFILES))
        .map(rperf_perfdata::sections::decode_jit_symfiles)
        .unwrap_or_default();
    if !symfiles.is_empty() {
        writeln!(w, "JIT symbol files (GDB JIT interface):")?;
        for f in &symfiles {
            writeln!(w, "  {}", crate::jit::describe_symfile(f))?;
        }
    }
    writeln!(w, "events:")?;
    for (i, a) in perf_file.event_attributes().iter().enumerate() {
        writeln!(w, "  [{i}] {:?} ids {:?}: {:?}", a.name(), a.event_ids, a.attr)?;
    }
    Ok(())
}

/// Every record, decoded as the report decodes it; returns how many.
fn write_records(w: &mut dyn Write, records: &mut crate::records::RecordReader) -> std::io::Result<u64> {
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
            }?;
            n += 1;
        }
        match batch.end {
            Some(Err(e)) => {
                writeln!(w, "stopped after {n} records: {e}")?;
                break;
            }
            Some(Ok(())) => break,
            None => {}
        }
    }
    Ok(n)
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
