//! Every sample of a profile, one after another, for readers that take samples one at a time
//! with their frames' run-time places and tracepoint data (the report library). Samples are
//! written to an unnamed temporary file as they are counted and read back in the same order,
//! so that memory grows with distinct stacks and mappings, not with samples.
//!
//! An entry: section (u32), time (u64), comm, pid, tid, cpu, stack (u32 each), off-CPU (u8),
//! weight (u64), the process's name (u32, `u32::MAX` when unknown), the number of places (u32)
//! and each place's address (u64) and interned mapping (u32), the length of the tracepoint
//! data (u32) and the data, the number of counter group values (u32) and each one's event
//! (u32), id and value (u64 each). Native byte order: the file lives only as long as the
//! profile.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};

use rustc_hash::FxHashMap;

use crate::profile::{GroupValue, Place, Row, StackId, Thread};

/// Writes samples as they are counted.
pub struct SampleLog {
    out: BufWriter<File>,
    maps: Vec<(u64, u64, u64)>,
    maps_index: FxHashMap<(u64, u64, u64), u32>,
    count: u64,
    /// The first write that failed: reading the log gives it.
    failed: Option<io::Error>,
    /// The entry being written (kept, so that samples reuse its memory).
    entry: Vec<u8>,
}

/// One logged sample, as read back.
#[derive(Clone, Debug, Default)]
pub struct LoggedSample {
    /// The section it counts in (an index of `Profile::sections`).
    pub section: u32,
    /// Its time, thread, CPU, stack and weight.
    pub row: Row,
    /// Its recorded frames' run-time places, innermost first (before ART's frames were
    /// hidden; `Profile::stack_origin` maps shown frames to these).
    pub places: Vec<Place>,
    /// Its tracepoint data; empty when none.
    pub raw: Vec<u8>,
    /// The name of its process (the thread whose id is the pid) when the sample was taken, as
    /// an index of `Names::comms`; None when the recording never named it.
    pub process: Option<u32>,
    /// Its counter group's values as recorded (simpleperf's `--add-counter`).
    pub group: Vec<GroupValue>,
}

/// Reads the logged samples back, those the profile's filters keep, in the order they were
/// counted.
pub struct SampleReader {
    input: BufReader<File>,
    left: u64,
    maps: Vec<(u64, u64, u64)>,
    /// Per stack: whether the symbol filters keep it.
    kept: Vec<bool>,
    /// Per section as logged: its index among the sections kept (`--event`).
    sections: Vec<Option<u32>>,
    failed: Option<io::Error>,
}

impl std::fmt::Debug for SampleReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampleReader").field("left", &self.left).finish_non_exhaustive()
    }
}

impl SampleLog {
    /// A log in a new unnamed file of the temporary folder ($TMPDIR, else /tmp).
    pub fn new() -> io::Result<SampleLog> {
        let file = tempfile::tempfile()?;
        Ok(SampleLog {
            out: BufWriter::with_capacity(1 << 16, file),
            maps: Vec::new(),
            maps_index: Default::default(),
            count: 0,
            failed: None,
            entry: Vec::new(),
        })
    }

    /// Appends a sample: its row, its process's name, its places and tracepoint data, and its
    /// counter group.
    pub fn push(
        &mut self,
        section: u32,
        row: &Row,
        process: Option<u32>,
        (places, raw): (&[Place], &[u8]),
        group: &[GroupValue],
    ) {
        if self.failed.is_some() {
            return;
        }
        let mut entry = std::mem::take(&mut self.entry);
        entry.clear();
        entry.extend_from_slice(&section.to_ne_bytes());
        entry.extend_from_slice(&row.time.to_ne_bytes());
        entry.extend_from_slice(&row.thread.comm.to_ne_bytes());
        entry.extend_from_slice(&row.thread.pid.to_ne_bytes());
        entry.extend_from_slice(&row.thread.tid.to_ne_bytes());
        entry.extend_from_slice(&row.cpu.to_ne_bytes());
        entry.extend_from_slice(&row.stack.to_ne_bytes());
        entry.push(row.off_cpu as u8);
        entry.extend_from_slice(&row.weight.to_ne_bytes());
        entry.extend_from_slice(&process.unwrap_or(u32::MAX).to_ne_bytes());
        entry.extend_from_slice(&(places.len() as u32).to_ne_bytes());
        for p in places {
            let next = self.maps.len() as u32;
            let map = *self.maps_index.entry(p.map).or_insert(next);
            if map == next {
                self.maps.push(p.map);
            }
            entry.extend_from_slice(&p.ip.to_ne_bytes());
            entry.extend_from_slice(&map.to_ne_bytes());
        }
        entry.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        entry.extend_from_slice(raw);
        entry.extend_from_slice(&(group.len() as u32).to_ne_bytes());
        for g in group {
            entry.extend_from_slice(&g.event.to_ne_bytes());
            entry.extend_from_slice(&g.id.to_ne_bytes());
            entry.extend_from_slice(&g.value.to_ne_bytes());
        }
        match self.out.write_all(&entry) {
            Ok(()) => self.count += 1,
            Err(e) => self.failed = Some(e),
        }
        self.entry = entry;
    }

    /// Ends writing. `kept` says, per stack, whether the symbol filters keep its samples;
    /// `sections` maps each section as logged to its index among those kept.
    pub fn finish(self, kept: Vec<bool>, sections: Vec<Option<u32>>) -> SampleReader {
        let SampleLog { out, maps, count, mut failed, .. } = self;
        let mut file = match out.into_inner() {
            Ok(f) => Some(f),
            Err(e) => {
                failed.get_or_insert(e.into_error());
                None
            }
        };
        if let Some(f) = &mut file {
            use std::io::Seek;
            if let Err(e) = f.rewind() {
                failed.get_or_insert(e);
            }
        }
        let file = match file {
            Some(f) => f,
            // Reading gives the error; an empty file stands in.
            None => tempfile::tempfile().unwrap_or_else(|_| File::open("/dev/null").expect("/dev/null")),
        };
        SampleReader {
            input: BufReader::with_capacity(1 << 16, file),
            left: count,
            maps,
            kept,
            sections,
            failed,
        }
    }
}

impl SampleReader {
    /// Reads the next kept sample into `out`; false at the end.
    pub fn next_into(&mut self, out: &mut LoggedSample) -> io::Result<bool> {
        if let Some(e) = self.failed.take() {
            self.left = 0;
            return Err(io::Error::new(e.kind(), format!("the report's temporary sample log: {e}")));
        }
        while self.left > 0 {
            self.left -= 1;
            let section = self.u32()?;
            let time = self.u64()?;
            let thread = Thread { comm: self.u32()?, pid: self.u32()? as i32, tid: self.u32()? as i32 };
            let cpu = self.u32()?;
            let stack: StackId = self.u32()?;
            let off_cpu = self.bytes::<1>()?[0] != 0;
            let weight = self.u64()?;
            out.process = Some(self.u32()?).filter(|&p| p != u32::MAX);
            out.places.clear();
            for _ in 0..self.u32()? {
                let ip = self.u64()?;
                let map = self.u32()? as usize;
                let map = self.maps.get(map).copied().unwrap_or_default();
                out.places.push(Place { ip, map });
            }
            let raw_len = self.u32()? as usize;
            out.raw.resize(raw_len, 0);
            self.input.read_exact(&mut out.raw)?;
            out.group.clear();
            for _ in 0..self.u32()? {
                let (event, id, value) = (self.u32()?, self.u64()?, self.u64()?);
                out.group.push(GroupValue { event, id, value });
            }
            let shown = self.sections.get(section as usize).copied().flatten();
            let kept = self.kept.get(stack as usize).copied().unwrap_or(false);
            let (Some(section), true) = (shown, kept) else { continue };
            out.section = section;
            out.row = Row { time, thread, cpu, stack, off_cpu, weight };
            return Ok(true);
        }
        Ok(false)
    }

    fn bytes<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.input.read_exact(&mut b)?;
        Ok(b)
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_ne_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_ne_bytes(self.bytes()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_back_in_order_with_places_and_data_and_filters_apply() {
        let mut log = SampleLog::new().unwrap();
        let thread = Thread { comm: 1, pid: 10, tid: 11 };
        let row = |time, stack| Row { time, thread, cpu: 2, stack, off_cpu: false, weight: 7 };
        let place = |ip| Place { ip, map: (0x1000, 0x2000, 0) };
        let group = [GroupValue { event: 1, id: 9, value: 300 }];
        log.push(0, &row(5, 0), Some(4), (&[place(0x1100), place(0x1200)], b"raw"), &group);
        log.push(1, &row(6, 1), None, (&[place(0x1300)], b""), &[]);
        log.push(0, &row(7, 2), None, (&[], b""), &[]);
        log.push(2, &row(8, 0), None, (&[], b""), &[]);
        // Stack 1 is filtered out; section 2 is dropped and section 0 becomes 1.
        let mut r = log.finish(vec![true, false, true], vec![Some(1), Some(0), None]);
        let mut s = LoggedSample::default();
        assert!(r.next_into(&mut s).unwrap());
        assert_eq!((s.section, s.row.time, s.row.weight, s.raw.as_slice()), (1, 5, 7, &b"raw"[..]));
        assert_eq!(s.places, [place(0x1100), place(0x1200)]);
        assert_eq!((s.process, s.group.as_slice()), (Some(4), &group[..]));
        assert!(r.next_into(&mut s).unwrap());
        assert_eq!((s.section, s.row.time, s.places.len(), s.raw.len()), (1, 7, 0, 0));
        assert_eq!((s.process, s.group.len()), (None, 0));
        assert!(!r.next_into(&mut s).unwrap());
        assert!(!r.next_into(&mut s).unwrap());
    }
}
