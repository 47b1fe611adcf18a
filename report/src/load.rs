//! Loading a recording: the file is opened and its header and sections checked against its
//! length (repairing what can be repaired, with warnings), then what the reader needs before
//! the first record is gathered: the events, the architecture, build ids, the symbols and
//! rperf sections the file carries, and whether it is an off-CPU recording.

use std::collections::HashMap;
use std::path::Path;

use linux_perf_data::linux_perf_event_reader::AttrFlags;
use linux_perf_data::{Feature, PerfFile, PerfFileReader, SimpleperfFileRecord};
use rperf_perfdata::bytes::{u16_at, u32_at, u64_at};
use rperf_perfdata::checked::{open_checked, read_at};
use rperf_perfdata::feature;
use rperf_perfdata::header::{FileHeader, HEADER_SIZE};
use rperf_unwind::Arch;

use crate::configs::LoadConfig;
use crate::error::Unreadable;
use crate::options::ReportOptions;
use crate::profile::EventDesc;
use crate::records::{Reading, RecordReader};
use crate::Error;

/// A recording opened for reading, with what was learnt from its header.
pub struct Recording {
    /// The file's metadata sections.
    pub perf_file: PerfFile,
    /// Its records, in time order.
    pub records: RecordReader,
    /// Its events, in file order.
    pub events: Vec<EventDesc>,
    /// The architecture it was recorded on.
    pub arch: Arch,
    /// The architecture's name as recorded.
    pub arch_name: Option<String>,
    /// The recording command line.
    pub cmdline: Option<String>,
    /// Build ids by path.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// simpleperf's stored symbol tables.
    pub stored_symbols: Vec<SimpleperfFileRecord>,
    /// Made for off-CPU weighting (rperf's or simpleperf's `--trace-offcpu`).
    pub off_cpu: bool,
    /// How far the reader is into the file, and repairs made while reading.
    pub reading: Reading,
    /// The file's length.
    pub len: u64,
    /// When the file was last written.
    pub written: Option<std::time::SystemTime>,
    /// Repairs made and other problems of the header.
    pub warnings: Vec<crate::Warning>,
    /// How long sampling was on, and how long the recording lasted (rperf's recordings).
    pub recorded: Option<(u64, u64)>,
    /// The event of each sample id, where the reader could not tell events apart: files with
    /// several events whose ids are only in the attribute section (older simpleperf files).
    pub event_of_id: Option<HashMap<u64, usize>>,
    /// The recording was cut short (it has no feature sections, which perf, simpleperf and
    /// rperf write when a recording ends) and made on the running kernel since its boot: the
    /// `_text` address its kernel mapping names is this kernel's (KASLR moves it every boot).
    pub cut_short_here: bool,
}

/// The binaries a recording names with a build id (by path, as recorded), as `rperf android
/// pull-binaries` fetches them; the kernel, the vDSO and other pseudo-files are left out.
pub fn binaries(path: &Path) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let perf_file = open_reader(path)?.perf_file;
    let mut out: Vec<(String, Vec<u8>)> = perf_file
        .build_ids()
        .map(|m| {
            m.into_values().map(|d| (String::from_utf8_lossy(&d.path).into_owned(), d.build_id)).collect()
        })
        .unwrap_or_default();
    out.retain(|(p, id)| p.starts_with('/') && id.iter().any(|b| *b != 0));
    out.sort();
    out.dedup();
    Ok(out)
}

/// What a recording's header says, read without its records.
pub struct Facts {
    /// Made for off-CPU weighting (rperf's or simpleperf's `--trace-offcpu`).
    pub off_cpu: bool,
    /// The feature sections it has, by id.
    pub features: HashMap<u32, Vec<u8>>,
    /// Build ids by path, as recorded.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// Its events' names, in the file's order.
    pub events: Vec<String>,
}

/// Reads what `path`'s header says.
pub fn facts(path: &Path) -> Result<Facts, Error> {
    let opts = ReportOptions { input: path.to_path_buf(), ..Default::default() };
    let rec = open(&opts.load_config(Default::default()))?;
    let features = rec
        .perf_file
        .features()
        .iter()
        .filter_map(|f| Some((f.0, rec.perf_file.feature_section_data(f)?.to_vec())))
        .collect();
    let events = rec.events.into_iter().map(|e| e.name).collect();
    Ok(Facts { off_cpu: rec.off_cpu, features, build_ids: rec.build_ids, events })
}

/// Opens `opts.input` and reads its header and metadata.
pub fn open(opts: &LoadConfig) -> Result<Recording, Error> {
    let path = &opts.input;
    let Opened { perf_file, mut records, reading, warnings, input } = open_reader(path)?;
    if opts.needs.callers {
        records.for_unwinding();
    }
    let (events, event_of_id) = events_of(&perf_file, &input);
    let arch_name = perf_file.arch().ok().flatten().map(str::to_string);
    let arch = arch_name.as_deref().and_then(Arch::from_name).unwrap_or(if cfg!(target_arch = "aarch64") {
        Arch::Aarch64
    } else {
        Arch::X86_64
    });
    let cmdline = perf_file.cmdline().ok().flatten().map(|v| v.join(" "));
    let build_ids = perf_file
        .build_ids()
        .map(|m| {
            m.into_values().map(|d| (String::from_utf8_lossy(&d.path).into_owned(), d.build_id)).collect()
        })
        .unwrap_or_default();
    let stored_symbols = perf_file.simpleperf_symbol_tables().ok().flatten().unwrap_or_default();
    let rperf_info = perf_file
        .feature_section_data(Feature(feature::RPERF_INFO))
        .map(rperf_perfdata::RecordingInfo::decode);
    let off_cpu = is_off_cpu(&perf_file, rperf_info.as_ref(), cmdline.as_deref());
    if let Some(filter) = &opts.filter_clock {
        let clock = recording_clock(&perf_file);
        if clock != *filter {
            return Err(Error::FilterClock { recording: clock, filter: filter.clone() });
        }
    }
    let recorded = rperf_info.and_then(|i| Some((i.recorded_ns?, i.elapsed_ns?)));
    let mut warnings: Vec<crate::Warning> = warnings.into_iter().map(crate::Warning::from).collect();
    let cut_short_here = cut_short(path, &input.file, &mut warnings);
    Ok(Recording {
        perf_file,
        records,
        events,
        arch,
        arch_name,
        cmdline,
        build_ids,
        stored_symbols,
        off_cpu,
        reading,
        len: input.len,
        written: input.written,
        warnings,
        event_of_id,
        recorded,
        cut_short_here,
    })
}

/// The file's events, and which event each sample id belongs to when the attributes do not
/// list their ids (simpleperf's files list them in a section of their own).
fn events_of(perf_file: &PerfFile, input: &Input) -> (Vec<EventDesc>, Option<HashMap<u64, usize>>) {
    let raw = raw_attrs(&input.file);
    let attrs = perf_file.event_attributes();
    let event_of_id = (attrs.len() > 1 && attrs.iter().all(|a| a.event_ids.is_empty()))
        .then(|| {
            let ids = attr_ids(&input.file, input.len);
            let map: HashMap<u64, usize> =
                ids.iter().enumerate().flat_map(|(i, ids)| ids.iter().map(move |&id| (id, i))).collect();
            Some(map).filter(|m| !m.is_empty())
        })
        .flatten();
    let events = attrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (type_, config) = raw.get(i).copied().unwrap_or((u32::MAX, 0));
            let flags = a.attr.flags;
            let name = rperf_perfdata::events::report_name(
                type_,
                config,
                a.name(),
                flags.contains(AttrFlags::EXCLUDE_USER),
                flags.contains(AttrFlags::EXCLUDE_KERNEL),
            );
            EventDesc { name, type_, config }
        })
        .collect();
    (events, event_of_id)
}

/// Whether the recording names the running kernel's release (perf and rperf record it).
pub(crate) fn recorded_on_this_kernel(perf_file: &linux_perf_data::PerfFile) -> bool {
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let recorded = perf_file.os_release().ok().flatten().unwrap_or_default();
    !recorded.is_empty() && recorded == running.trim()
}

/// The clock the recording's timestamps are of, named as simpleperf names it: its meta info's
/// `clockid`, else the clock of the attributes (`perf` when they name none).
fn recording_clock(perf_file: &PerfFile) -> String {
    use linux_perf_data::linux_perf_event_reader::{ClockId, PerfClock};
    let meta = perf_file.simpleperf_meta_info().ok().flatten();
    if let Some(clock) = meta.as_ref().and_then(|m| m.get("clockid")) {
        return clock.to_string();
    }
    let name = match perf_file.event_attributes().first().map(|a| a.attr.clock) {
        Some(PerfClock::ClockId(ClockId::Monotonic)) => "monotonic",
        Some(PerfClock::ClockId(ClockId::MonotonicRaw)) => "monotonic_raw",
        Some(PerfClock::ClockId(ClockId::Boottime)) => "boottime",
        Some(PerfClock::ClockId(ClockId::Realtime)) => "realtime",
        Some(PerfClock::ClockId(other)) => return format!("{other:?}").to_lowercase(),
        _ => "perf",
    };
    name.to_string()
}

/// Whether the recording was made for off-CPU weighting: rperf's info section or
/// simpleperf's meta info says so, or (rperf's recordings from before the info section) the
/// command line.
fn is_off_cpu(
    perf_file: &PerfFile,
    rperf_info: Option<&rperf_perfdata::RecordingInfo>,
    cmdline: Option<&str>,
) -> bool {
    let simpleperf_offcpu = perf_file
        .simpleperf_meta_info()
        .ok()
        .flatten()
        .is_some_and(|m| m.get("trace_offcpu").is_some_and(|v| *v == "true"));
    let old_rperf_offcpu = rperf_info.is_none()
        && perf_file.feature_section_data(Feature(feature::RPERF_KALLSYMS)).is_some()
        && cmdline.is_some_and(|c| c.split(' ').any(|a| a == "--trace-offcpu"));
    rperf_info.is_some_and(|i| i.trace_offcpu) || simpleperf_offcpu || old_rperf_offcpu
}

/// A recording without feature sections was cut short: says so in `warnings`, and returns
/// whether it was made on this machine since its last boot (kernel frames are then named
/// from this kernel).
fn cut_short(path: &Path, file: &std::fs::File, warnings: &mut Vec<crate::Warning>) -> bool {
    let header = file_header(file);
    if !header.as_ref().is_some_and(|h| h.features.is_empty()) {
        return false;
    }
    let here = header
        .as_ref()
        .and_then(|h| recorded_kernel_text(file, h.data))
        .is_some_and(|t| Some(t) == running_kernel_text());
    // The recorder holds its file locked until it exits.
    let recording = match rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock).ok();
            false
        }
        Err(e) => e == rustix::io::Errno::WOULDBLOCK,
    };
    warnings.push(crate::Warning::CutShort { path: path.to_path_buf(), made_here: here, recording });
    here
}

/// The address of `_text` that the first kernel mapping of the data section (`data`: offset
/// and size) names: perf and rperf write a `[kernel.kallsyms]_text` mapping among the first
/// records, its file offset being `_text`'s address.
fn recorded_kernel_text(f: &std::fs::File, data: (u64, u64)) -> Option<u64> {
    const MMAP: u32 = 1;
    let mut buf = vec![0u8; data.1.min(64 << 10) as usize];
    read_at(f, data.0, &mut buf).ok()?;
    let mut at = 0;
    while at + 8 <= buf.len() {
        let kind = u32_at(&buf, at)?;
        let size = usize::from(u16_at(&buf, at + 6)?);
        if size < 8 || at + size > buf.len() {
            return None;
        }
        let rec = &buf[at..at + size];
        if kind == MMAP && size > 40 && u32_at(rec, 8) == Some(u32::MAX) {
            let name = &rec[40..];
            if name.starts_with(b"[kernel.kallsyms]") {
                return u64_at(rec, 32).filter(|&t| t != 0);
            }
        }
        at += size;
    }
    None
}

/// This kernel's `_text` address, when /proc/kallsyms shows addresses.
fn running_kernel_text() -> Option<u64> {
    use std::io::BufRead;
    let f = std::fs::File::open("/proc/kallsyms").ok()?;
    std::io::BufReader::new(f).lines().take(100_000).map_while(Result::ok).find_map(|l| {
        let mut parts = l.split_whitespace();
        let (addr, _, name) = (parts.next()?, parts.next()?, parts.next()?);
        (name == "_text").then(|| u64::from_str_radix(addr, 16).ok()).flatten().filter(|&a| a != 0)
    })
}

/// Opens a recording for reading, after checking it and repairing what can be repaired (the
/// warnings say what): its metadata, and a reader of its records. `rperf report` and `rperf
/// dump` both read through here.
pub fn open_reader(path: &Path) -> Result<Opened, Error> {
    let open_error = |e| Error::Open { path: path.to_path_buf(), source: e };
    // Opened once: every later read is of this file, whatever happens to the path meanwhile.
    let file = std::fs::File::open(path).map_err(open_error)?;
    let meta = file.metadata().map_err(open_error)?;
    if meta.is_dir() {
        return Err(Error::Directory { path: path.to_path_buf() });
    }
    let format = |reason: Unreadable| Error::Format { path: path.to_path_buf(), reason };
    let (patched, data, warnings) =
        open_checked(file.try_clone().map_err(open_error)?).map_err(|e| format(e.into()))?;
    let PerfFileReader { perf_file, .. } =
        PerfFileReader::parse_file(patched).map_err(|e| format(Unreadable::Metadata(e.to_string())))?;
    let reading = Reading::default();
    let records = RecordReader::new(file.try_clone().map_err(open_error)?, data, &perf_file, reading.clone());
    let input = Input { file, len: meta.len(), written: meta.modified().ok() };
    Ok(Opened { perf_file, records, reading, warnings, input })
}

/// The input file, opened once.
pub struct Input {
    /// The file.
    pub file: std::fs::File,
    /// Its length when opened.
    pub len: u64,
    /// When it was last written.
    pub written: Option<std::time::SystemTime>,
}

/// A recording opened for reading: its metadata, a reader of its records, what the reader
/// repaired so far, warnings about the header, and the file.
pub struct Opened {
    /// The metadata.
    pub perf_file: PerfFile,
    /// The records, in time order.
    pub records: RecordReader,
    /// The reader's progress and repairs.
    pub reading: Reading,
    /// What opening repaired or left out.
    pub warnings: Vec<rperf_perfdata::checked::Repaired>,
    /// The file.
    pub input: Input,
}

/// The header of `file`, when it has one.
pub fn file_header(file: &std::fs::File) -> Option<FileHeader> {
    let mut head = [0u8; HEADER_SIZE as usize];
    read_at(file, 0, &mut head).ok()?;
    FileHeader::parse(&head)
}

/// The attribute section's bytes, with the file and the size of one entry; None when the
/// header does not give a readable section of sane size.
fn attr_section(f: &std::fs::File) -> Option<(usize, Vec<u8>)> {
    let h = file_header(f)?;
    let (off, size) = h.attrs;
    if h.attr_size < 16 || size > (1 << 24) {
        return None;
    }
    let mut buf = vec![0u8; size as usize];
    read_at(f, off, &mut buf).ok()?;
    Some((h.attr_size as usize, buf))
}

/// (type, config) of each attribute, in file order, read from the attribute section.
fn raw_attrs(f: &std::fs::File) -> Vec<(u32, u64)> {
    let Some((entry, buf)) = attr_section(f) else { return Vec::new() };
    buf.chunks(entry).filter_map(|c| Some((u32_at(c, 0)?, u64_at(c, 8)?))).collect()
}

/// The id list of each entry of the attribute section (each entry ends in the offset and size
/// of its list); lists that do not fit in the file are empty.
fn attr_ids(f: &std::fs::File, file_len: u64) -> Vec<Vec<u64>> {
    let Some((entry, buf)) = attr_section(f).filter(|(entry, _)| *entry >= 32) else {
        return Vec::new();
    };
    buf.chunks_exact(entry)
        .map(|c| {
            let at = c.len() - 16;
            let (ids_off, ids_size) = (u64_at(c, at).unwrap_or(0), u64_at(c, at + 8).unwrap_or(0));
            let fits =
                ids_off.checked_add(ids_size).is_some_and(|end| end <= file_len) && ids_size <= 8 << 20;
            let mut ids = vec![0u8; if fits { ids_size as usize } else { 0 }];
            if read_at(f, ids_off, &mut ids).is_err() {
                return Vec::new();
            }
            ids.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
        })
        .collect()
}
