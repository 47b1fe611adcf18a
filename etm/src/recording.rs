//! What decoding ETM trace reads of a recording, in file order: its trace units, its AUX
//! records (where each CPU's trace went) with the AUXTRACE data they point at, and the records
//! that say which threads ran which binaries where (comm, fork, mmap).

use std::collections::HashMap;
use std::path::Path;

use rperf_perfdata::bytes::{u32_at, u64_at};
use rperf_perfdata::encode::AUXTRACE;

use crate::info::{parse_auxtrace_info, CpuTrace};

const MMAP: u32 = 1;
const COMM: u32 = 3;
const FORK: u32 = 7;
const MMAP2: u32 = 10;
const AUX: u32 = 11;
const AUXTRACE_INFO: u32 = 70;
/// `PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW`: the AUX data is one unit's raw stream.
const AUX_RAW: u64 = 0x100;

/// A recording opened for its ETM trace.
pub struct EtmRecording {
    map: memmap2::Mmap,
    /// Its trace units, from the AUXTRACE_INFO record.
    pub units: Vec<CpuTrace>,
    data: (usize, usize),
    /// Per CPU: (offset in that CPU's AUX stream, length, file offset) of each AUXTRACE data.
    chunks: HashMap<u32, Vec<(u64, u64, usize)>>,
    /// Where the CPU lies from the end of a record's sample_id fields, when recorded.
    cpu_from_end: Option<usize>,
}

/// A record that matters to decoding.
pub enum Record<'a> {
    /// A CPU's trace from `offset` of its AUX stream; `raw`: one unit's unformatted stream.
    Aux {
        cpu: u32,
        data: Vec<u8>,
        raw: bool,
        missing: bool,
    },
    Comm {
        pid: i32,
        tid: i32,
        name: &'a [u8],
    },
    Fork {
        pid: i32,
        tid: i32,
    },
    Mmap {
        pid: i32,
        kernel: bool,
        mapping: Mapping,
    },
}

/// A file mapped into an address space.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub start: u64,
    pub len: u64,
    pub pgoff: u64,
    pub path: String,
}

/// Threads, their processes and the processes' mappings, as the records so far say.
#[derive(Default)]
pub struct Threads {
    pid_of: HashMap<i32, i32>,
    comm: HashMap<i32, String>,
    maps: HashMap<i32, Vec<Mapping>>,
    kernel: Vec<Mapping>,
}

impl Threads {
    /// Applies a record.
    pub fn apply(&mut self, r: &Record<'_>) {
        match r {
            Record::Comm { pid, tid, name } => {
                self.pid_of.insert(*tid, *pid);
                self.comm.insert(*tid, String::from_utf8_lossy(name).into_owned());
            }
            Record::Fork { pid, tid } => {
                self.pid_of.insert(*tid, *pid);
            }
            Record::Mmap { pid, kernel, mapping } => {
                let maps = if *kernel { &mut self.kernel } else { self.maps.entry(*pid).or_default() };
                maps.retain(|m| m.start + m.len <= mapping.start || mapping.start + mapping.len <= m.start);
                maps.push(mapping.clone());
            }
            Record::Aux { .. } => {}
        }
    }

    /// A thread's process and name.
    pub fn thread(&self, tid: i32) -> Option<(i32, &str)> {
        let pid = *self.pid_of.get(&tid)?;
        Some((pid, self.comm.get(&tid).map_or("", String::as_str)))
    }

    /// The mapping that holds `addr` in thread `tid`'s process, else in the kernel.
    pub fn mapping(&self, tid: Option<i32>, addr: u64) -> Option<&Mapping> {
        let pid = tid.and_then(|t| self.pid_of.get(&t).copied()).or(tid);
        let holds = |m: &&Mapping| m.start <= addr && addr - m.start < m.len;
        let user = pid.and_then(|p| self.maps.get(&p)).and_then(|maps| maps.iter().rev().find(holds));
        user.or_else(|| self.kernel.iter().rev().find(holds))
    }
}

/// Calls `f` with each record of `data` (type, misc, body) in file order, through the one
/// walk over a data section (`rperf_perfdata::walk`); an AUXTRACE record's trace data follows
/// its body (`extra`: its range in the file). Stops at a record that does not fit.
fn walk(map: &[u8], (start, end): (usize, usize), mut f: impl FnMut(u32, u16, &[u8], (usize, usize))) {
    let mut walk = rperf_perfdata::walk::Walk::new(start as u64, end as u64, false);
    let mut bytes = map;
    while let Some(Ok(step)) = walk.next(&mut bytes) {
        if step.trace_cut.is_some() {
            return;
        }
        let (at, size, next) = (step.at as usize, step.size as usize, step.next as usize);
        f(step.kind, step.misc, &map[at + 8..at + size], (at + size, next));
    }
}

/// The NUL-terminated string at the start of `b`.
fn c_str(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

impl EtmRecording {
    /// Opens `path`; None when it holds no ETM trace (no AUXTRACE_INFO record).
    pub fn open(path: &Path) -> Result<Option<EtmRecording>, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let map = rperf_perfdata::mapped::map(&file).map_err(|e| format!("{}: {e}", path.display()))?;
        let bad = |what: &str| format!("{}: {what}", path.display());
        let header =
            rperf_perfdata::header::FileHeader::parse(&map).ok_or_else(|| bad("not a perf.data file"))?;
        let (attrs_at, data) = (header.attrs.0 as usize, header.data);
        let data = (data.0 as usize, data.0.saturating_add(data.1) as usize);
        if data.1 > map.len() || header.attr_size < 64 || header.attrs.1 < header.attr_size {
            return Err(bad("the header's sections lie outside the file"));
        }
        let sample_type = u64_at(&map, attrs_at + 24).ok_or_else(|| bad("no event attributes"))?;
        let flags = u64_at(&map, attrs_at + 40).unwrap_or(0);
        // sample_id fields end with CPU (8 bytes) and IDENTIFIER (8), each when recorded.
        let cpu_from_end = (flags & (1 << 18) != 0 && sample_type & (1 << 7) != 0)
            .then(|| 8 + if sample_type & (1 << 16) != 0 { 8 } else { 0 });
        let mut info = None;
        let mut chunks: HashMap<u32, Vec<(u64, u64, usize)>> = HashMap::new();
        walk(&map, data, |type_, _, body, (from, to)| match type_ {
            AUXTRACE_INFO if info.is_none() => info = Some(parse_auxtrace_info(body)),
            AUXTRACE => {
                if let (Some(offset), Some(cpu)) = (u64_at(body, 8), u32_at(body, 32)) {
                    chunks.entry(cpu).or_default().push((offset, (to - from) as u64, from));
                }
            }
            _ => {}
        });
        let Some(info) = info else { return Ok(None) };
        let units = info.map_err(|e| bad(&e))?;
        Ok(Some(EtmRecording { map, units, data, chunks, cpu_from_end }))
    }

    /// Calls `f` with each record that matters to decoding, in file order.
    pub fn each(&self, mut f: impl FnMut(Record<'_>)) {
        walk(&self.map, self.data, |type_, misc, body, _| {
            let kernel = misc & 7 == 1;
            let i32_at = |at: usize| u32_at(body, at).map(|v| v as i32);
            let record = match type_ {
                COMM => {
                    (|| Some(Record::Comm { pid: i32_at(0)?, tid: i32_at(4)?, name: c_str(body.get(8..)?) }))(
                    )
                }
                FORK => (|| Some(Record::Fork { pid: i32_at(0)?, tid: i32_at(8)? }))(),
                MMAP | MMAP2 => (|| {
                    let name_at = if type_ == MMAP { 32 } else { 64 };
                    let path = String::from_utf8_lossy(c_str(body.get(name_at..)?)).into_owned();
                    let mapping = Mapping {
                        start: u64_at(body, 8)?,
                        len: u64_at(body, 16)?,
                        pgoff: u64_at(body, 24)?,
                        path,
                    };
                    Some(Record::Mmap { pid: i32_at(0)?, kernel, mapping })
                })(),
                AUX => self.aux(body),
                _ => None,
            };
            if let Some(r) = record {
                f(r);
            }
        });
    }

    /// An AUX record: the CPU's trace it points at.
    fn aux(&self, body: &[u8]) -> Option<Record<'static>> {
        let (offset, size, flags) = (u64_at(body, 0)?, u64_at(body, 8)?, u64_at(body, 16)?);
        let cpu = u32_at(body, body.len().checked_sub(self.cpu_from_end?)?)?;
        let mut data = Vec::with_capacity(size.min(1 << 26) as usize);
        let mut want = offset;
        let end = offset.checked_add(size)?;
        for &(from, len, at) in self.chunks.get(&cpu).map_or(&[][..], Vec::as_slice) {
            if want >= end {
                break;
            }
            if from <= want && want < from + len {
                let skip = (want - from) as usize;
                let take = (len - (want - from)).min(end - want) as usize;
                data.extend_from_slice(&self.map[at + skip..at + skip + take]);
                want += take as u64;
            }
        }
        let missing = want < end;
        Some(Record::Aux { cpu, data, raw: flags & AUX_RAW != 0, missing })
    }
}
