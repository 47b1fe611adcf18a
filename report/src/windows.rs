//! The windows of a recording that its records are handed over in: windows of the file,
//! mapped a few MiB at a time, and the records inflated from perf's compressed records. A
//! window lives as long as a record in it is waiting to be used (records are slices of it,
//! never copies), so memory stays bounded by the windows in use, whatever the file's size.

use std::collections::VecDeque;
use std::sync::Arc;

use linux_perf_data::linux_perf_event_reader::{Endianness, RecordParseInfo};

use crate::error::{Problem, RecordError};

/// The file is mapped this many bytes at a time.
const WINDOW: u64 = 2 << 20;
/// The window size of a call-graph report (`Windows::smaller`; see `records.rs`). Flat reports
/// keep the larger windows: unmapping one is a page-table walk and a TLB flush on both cores.
const SMALLER_WINDOW: u64 = 1 << 20;

/// A window of the file, mapped, or of inflated records.
pub struct Mapped {
    pub map: Held,
    /// Its file offset (for a window of the file).
    start: u64,
    /// What records of every window are parsed with (shared, not copied per window).
    pub parse_infos: Arc<[RecordParseInfo]>,
    pub endian: Endianness,
}

/// A window's bytes: mapped from the file, or inflated from perf's compressed records.
pub enum Held {
    Map(memmap2::Mmap),
    Inflated(Vec<u8>),
}

impl std::ops::Deref for Held {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Held::Map(m) => m,
            Held::Inflated(v) => v,
        }
    }
}

/// The windows records are read from and waiting in, numbered in the order they were made.
pub struct Windows {
    file: std::fs::File,
    file_len: u64,
    /// Windows still holding records not handed over, oldest first (None: let go of).
    held: VecDeque<Option<Arc<Mapped>>>,
    /// The number of the first of `held`.
    first: u32,
    /// The number of the window of the file records are read from now.
    current: Option<u32>,
    parse_infos: Arc<[RecordParseInfo]>,
    endian: Endianness,
    /// The bytes mapped at a time.
    window: u64,
}

impl Windows {
    pub fn new(file: std::fs::File, parse_infos: Arc<[RecordParseInfo]>, endian: Endianness) -> Windows {
        let file_len = file.metadata().map_or(0, |m| m.len());
        let held = VecDeque::new();
        Windows { file, file_len, held, first: 0, current: None, parse_infos, endian, window: WINDOW }
    }

    /// Maps the file in smaller windows from now on.
    pub fn smaller(&mut self) {
        self.window = SMALLER_WINDOW;
    }

    /// The file's length.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The file.
    pub fn file(&self) -> &std::fs::File {
        &self.file
    }

    /// The file's length now, for a file still being written; windows map up to it.
    pub fn grown(&mut self) -> u64 {
        if let Ok(m) = self.file.metadata() {
            self.file_len = self.file_len.max(m.len());
        }
        self.file_len
    }

    /// Window `number`, which a record waiting or being read lies in.
    pub fn get(&self, number: u32) -> &Arc<Mapped> {
        self.held[(number - self.first) as usize].as_ref().expect("a window in use is held")
    }

    /// The window (its number) and the offset in it of `n` bytes at file offset `at`, mapping
    /// a new window when the current one does not hold them all.
    pub fn bytes_at(&mut self, at: u64, n: u64) -> Result<(u32, usize), RecordError> {
        if let Some(number) = self.current {
            let w = self.get(number);
            if at >= w.start && at + n <= w.start + w.map.len() as u64 {
                return Ok((number, (at - w.start) as usize));
            }
        }
        let (start, map) =
            rperf_perfdata::mapped::window(&self.file, self.file_len, at, n, self.window, false)
                .map_err(|e| RecordError { offset: at, problem: Problem::Map(Arc::new(e)) })?;
        // Its pages are put in the page table here, on the reader's thread, not where the
        // converter first reads each one: a read maps the page cache's pages around it, 64 KiB
        // (the kernel's fault-around) at a time.
        const AROUND: usize = 64 << 10;
        let first = (start as usize).next_multiple_of(AROUND) - start as usize;
        for at in std::iter::once(0).chain((first..map.len()).step_by(AROUND)) {
            std::hint::black_box(map[at]);
        }
        let number = self.push(Held::Map(map), start);
        self.current = Some(number);
        Ok((number, (at - start) as usize))
    }

    /// A window of inflated records; its number.
    pub fn push_inflated(&mut self, bytes: Vec<u8>) -> u32 {
        self.push(Held::Inflated(bytes), u64::MAX)
    }

    fn push(&mut self, map: Held, start: u64) -> u32 {
        let parse_infos = self.parse_infos.clone();
        self.held.push_back(Some(Arc::new(Mapped { map, start, parse_infos, endian: self.endian })));
        self.first + self.held.len() as u32 - 1
    }

    /// Lets go of (unmaps, as far as the reader goes) the windows but those `used` (numbers,
    /// with repeats) and the window of the file the next record is read from.
    pub fn keep_only(&mut self, mut used: Vec<u32>) {
        used.extend(self.current);
        used.sort_unstable();
        used.dedup();
        for (i, w) in self.held.iter_mut().enumerate() {
            if used.binary_search(&(self.first + i as u32)).is_err() {
                *w = None;
            }
        }
        while self.held.front().is_some_and(Option::is_none) {
            self.held.pop_front();
            self.first += 1;
        }
    }
}

/// The file, for the record walk.
impl rperf_perfdata::walk::Source for Windows {
    type Error = RecordError;
    fn bytes(&mut self, at: u64, n: u64) -> Result<&[u8], RecordError> {
        let (number, start) = self.bytes_at(at, n)?;
        Ok(&self.get(number).map[start..])
    }
}
