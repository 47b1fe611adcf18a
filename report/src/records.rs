//! The records of a recording's data section, in time order, read straight from the mapped
//! file: a record is handed over as a slice of the mapping it lies in, never copied. The file
//! is mapped a window at a time and a window is unmapped once no record in it is waiting to be
//! used, so memory stays bounded by the windows in use, whatever the file's size.
//!
//! Records are put in time order as perf does: records of one round (up to a FINISHED_ROUND
//! record) may interleave with those of the round before, never with older ones, so a round's
//! records up to the previous round's latest time can go out once it ends. simpleperf writes no
//! rounds but nearly ordered records: every 1,024 records ends a round there.
//!
//! `read` runs the reader on a thread of its own, a batch at a time, so that reading (mapping
//! pages in, sorting) and converting records run side by side.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use byteorder::{BigEndian, ByteOrder, LittleEndian};
use linux_perf_data::linux_perf_event_reader::{
    get_record_id, get_record_identifier, get_record_timestamp, AttrFlags, Endianness, RawData,
    RawEventRecord, RecordIdParseInfo, RecordParseInfo, RecordType,
};
use linux_perf_data::{PerfFile, PerfFileRecord, RawUserRecord, UserRecordType};
use rperf_perfdata::checked::Repaired;
use rperf_perfdata::encode::{COMPRESSED, COMPRESSED2, FINISHED_ROUND};
use rperf_perfdata::walk::{Step, Stop, Walk};
use rustc_hash::FxHashMap;

use crate::error::{Problem, RecordError};
use crate::windows::{Mapped, Windows};

/// About this many bytes of records go in one batch.
const BATCH_BYTES: usize = 1 << 20;
/// The batch size of a report that unwinds its samples (`RecordReader::for_unwinding`), which
/// holds more beside the records (unwind tables, stacks). From windows of 1 MiB, 1 MiB batches
/// took `report -g`'s peak on a perf recording of a g++ compile over 32 MiB (these keep it
/// near 31); on a large recording whose stacks repeat, these take about 0.9 times the time of
/// the 256 KiB batches from 2 MiB windows before.
const UNWINDING_BATCH_BYTES: usize = 512 << 10;
/// Batches read ahead of the converter, at most: memory stays bounded by the batch size. The
/// reader, when it waits for room, is woken once the converter has taken them all (see
/// `handoff`): a batch at a time, the wake-ups had cost a call-graph report of a large
/// recording a fifth of its time.
const BATCHES_AHEAD: usize = 2;
/// Records per round in simpleperf's files, which have no FINISHED_ROUND records.
const SIMPLEPERF_ROUND: usize = 1024;

/// Records in time order, each a slice of a mapped window of the file.
#[derive(Default)]
pub struct Batch {
    windows: Vec<Arc<Mapped>>,
    records: Vec<Record>,
    /// Set on the last batch: how reading ended (an error says why it stopped).
    pub end: Option<Result<(), RecordError>>,
}

impl Batch {
    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The batch's records, kernel records with the index of their event.
    pub fn records(&self) -> impl Iterator<Item = PerfFileRecord<'_>> + '_ {
        self.records.iter().map(|r| {
            let w = &self.windows[r.window as usize];
            let data = RawData::Single(&w.map[r.start as usize..(r.start + r.len) as usize]);
            match r.attr {
                Some(attr) => PerfFileRecord::EventRecord {
                    attr_index: attr as usize,
                    record: RawEventRecord::new(r.kind, r.misc, data, w.parse_infos[attr as usize]),
                },
                None => PerfFileRecord::UserRecord(RawUserRecord {
                    record_type: UserRecordType::try_from(r.kind).expect("a user record type"),
                    endian: w.endian,
                    misc: r.misc,
                    data,
                }),
            }
        })
    }
}

/// A record: where its bytes are (past its 8-byte header) and what it is.
#[derive(Clone, Copy)]
struct Record {
    /// In a batch, the index of its window in the batch; in the sorter, the window's number.
    window: u32,
    start: u32,
    len: u32,
    kind: RecordType,
    misc: u16,
    /// Its event; None for user records.
    attr: Option<u32>,
}

/// How a record's event is found.
enum EventOf {
    OnlyOne,
    /// By its id, found where every event puts it.
    Id(RecordIdParseInfo),
    /// By its PERF_SAMPLE_IDENTIFIER field; whether non-sample records carry it.
    Identifier(bool),
}

/// Reads a data section's records in time order.
pub struct RecordReader {
    /// The walk over the data section, and the windows of the file it reads.
    walk: Walk,
    windows: Windows,
    endian: Endianness,
    parse_infos: Arc<[RecordParseInfo]>,
    event_of: EventOf,
    ids: FxHashMap<u64, u32>,
    round_every: Option<usize>,
    in_round: usize,
    /// About this many bytes of records go in one batch.
    batch_bytes: usize,
    /// Inflating perf's compressed records: the stream, and the start of a record that the
    /// next compressed record ends.
    inflate: Option<zstd_safe::DCtx<'static>>,
    inflated: Vec<u8>,
    sorter: Sorter,
    reading: Reading,
    failed: Option<RecordError>,
    /// Following a recording still being written: where its data section starts.
    following: Option<u64>,
}

impl RecordReader {
    /// A reader of `file`'s data section `data` (offset, size), whose metadata is `perf_file`.
    pub fn new(
        file: std::fs::File,
        data: (u64, u64),
        perf_file: &PerfFile,
        reading: Reading,
    ) -> RecordReader {
        let endian = perf_file.endian();
        let attrs = perf_file.event_attributes();
        let parse_infos: Arc<[RecordParseInfo]> =
            attrs.iter().map(|a| RecordParseInfo::new(&a.attr, endian)).collect();
        let ids = attrs
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.event_ids.iter().map(move |id| (*id, i as u32)))
            .collect();
        // The same rules as the metadata reader, which refuses files where none applies.
        let event_of = match &parse_infos[..] {
            [] | [_] => EventOf::OnlyOne,
            [first, rest @ ..] if rest.iter().all(|p| p.id_parse_info == first.id_parse_info) => {
                EventOf::Id(first.id_parse_info)
            }
            _ => EventOf::Identifier(attrs[0].attr.flags.contains(AttrFlags::SAMPLE_ID_ALL)),
        };
        let simpleperf =
            perf_file.feature_section_data(linux_perf_data::Feature::SIMPLEPERF_META_INFO).is_some();
        let windows = Windows::new(file, parse_infos.clone(), endian);
        let end = data.0.saturating_add(data.1).min(windows.file_len());
        RecordReader {
            walk: Walk::new(data.0, end, endian == Endianness::BigEndian),
            windows,
            endian,
            parse_infos,
            event_of,
            ids,
            round_every: simpleperf.then_some(SIMPLEPERF_ROUND),
            in_round: 0,
            batch_bytes: BATCH_BYTES,
            inflate: None,
            inflated: Vec::new(),
            sorter: Sorter::default(),
            reading,
            failed: None,
            following: None,
        }
    }

    /// Follows a recording still being written: its end is where the file ends at each
    /// `catch_up` (or where its header says, once written), and a record cut by it is read
    /// once it is whole. Records go out a round at a time, never before their round ended.
    pub fn follow(&mut self) {
        self.following = Some(self.walk.at());
    }

    /// Makes the records written since the last look readable (following a recording).
    pub fn catch_up(&mut self) {
        let Some(data_start) = self.following else { return };
        let len = self.windows.grown();
        // rperf's recorder writes the data section's size at each flush, perf and simpleperf
        // at the end; the feature sections come once the recording ended.
        let mut head = [0u8; rperf_perfdata::header::HEADER_SIZE as usize];
        let header = std::os::unix::fs::FileExt::read_exact_at(self.windows.file(), &mut head, 0)
            .ok()
            .and_then(|()| rperf_perfdata::header::FileHeader::parse(&head));
        let (size, ended) = header.map_or((0, false), |h| (h.data.1, !h.features.is_empty()));
        let end = match size {
            0 => len,
            size => data_start.saturating_add(size).min(len),
        };
        if ended {
            // Read to the end of its data section as any recording.
            self.following = None;
        }
        self.walk = Walk::new(self.walk.at(), end, self.endian == Endianness::BigEndian);
    }

    /// Hands records over in the smaller batches and windows of a report that unwinds its
    /// samples.
    pub fn for_unwinding(&mut self) {
        self.batch_bytes = UNWINDING_BATCH_BYTES;
        self.windows.smaller();
    }

    /// The next batch of records in time order; the last one has `end` set.
    pub fn next_batch(&mut self) -> Batch {
        let mut batch = Batch::default();
        let mut bytes = 0usize;
        // The batch's index of each window it uses, by the window's number.
        let mut local: Vec<(u32, u32)> = Vec::new();
        while bytes < self.batch_bytes {
            if self.sorter.ready.is_empty() {
                if self.following.is_some() && self.walk.at() >= self.walk.end() && self.failed.is_none() {
                    // Caught up: the records of the round not ended yet wait for its end.
                    break;
                }
                if self.walk.at() >= self.walk.end() || self.failed.is_some() {
                    self.sorter.finish();
                    if self.sorter.ready.is_empty() {
                        batch.end = Some(self.failed.take().map_or(Ok(()), Err));
                        break;
                    }
                } else {
                    self.read_round();
                    continue;
                }
            }
            let Some(mut r) = self.sorter.ready.pop_front() else { continue };
            let i = match local.iter().find(|(n, _)| *n == r.window) {
                Some((_, i)) => *i,
                None => {
                    let i = batch.windows.len() as u32;
                    batch.windows.push(self.windows.get(r.window).clone());
                    local.push((r.window, i));
                    i
                }
            };
            r.window = i;
            bytes += r.len as usize;
            batch.records.push(r);
        }
        self.windows.keep_only(self.sorter.windows());
        batch
    }

    /// Reads records until a round ends with records ready, or the data section ends.
    fn read_round(&mut self) {
        let result = match self.endian {
            Endianness::LittleEndian => self.read_round_as::<LittleEndian>(),
            Endianness::BigEndian => self.read_round_as::<BigEndian>(),
        };
        if let Err(why) = result {
            self.failed = Some(why);
        }
        self.reading.position.store(self.walk.at(), Ordering::Relaxed);
    }

    fn read_round_as<T: ByteOrder>(&mut self) -> Result<(), RecordError> {
        let end = self.walk.end();
        while let Some(step) = self.walk.next(&mut self.windows) {
            let step = match step {
                Ok(step) => step,
                // A record still being written, when following: read once it is whole.
                Err(Stop::HeaderCut { at, .. } | Stop::PastEnd { at, .. }) if self.following.is_some() => {
                    self.walk = Walk::new(at, at, self.endian == Endianness::BigEndian);
                    return Ok(());
                }
                Err(stop) => return Err(RecordError::stopped(stop, end)),
            };
            let Step { at, kind, misc, size, trace_cut, .. } = step;
            // Its trace data follows it, outside its size; reports use none of it.
            if let Some((claimed, left)) = trace_cut {
                let repair = Repaired::AuxtraceCut { at, claimed, left };
                self.reading.repairs.lock().unwrap_or_else(|e| e.into_inner()).push(repair);
            }
            let (window, start) = self.windows.bytes_at(at, size)?;
            match kind {
                FINISHED_ROUND => {
                    self.in_round = 0;
                    if self.sorter.finish_round() {
                        return Ok(());
                    }
                    continue;
                }
                COMPRESSED | COMPRESSED2 => {
                    if self.inflate_records::<T>(at, window, start, size as usize, kind)? {
                        return Ok(());
                    }
                    continue;
                }
                _ => {}
            }
            self.add::<T>(window, start, size as usize, kind, misc, (at, 0));
            if let Some(every) = self.round_every {
                self.in_round += 1;
                if self.in_round >= every {
                    self.in_round = 0;
                    if self.sorter.finish_round() {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Puts the record at `start` of window `window` (`size` bytes with its header) in the
    /// sorter, with its event and time; `place` (file offset, index in a compressed record)
    /// orders records of one time.
    fn add<T: ByteOrder>(
        &mut self,
        window: u32,
        start: usize,
        size: usize,
        kind: u32,
        misc: u16,
        place: (u64, u32),
    ) {
        let body = start + 8;
        let len = size - 8;
        let data = RawData::Single(&self.windows.get(window).map[body..body + len]);
        let kind = RecordType(kind);
        let (attr, time) = if kind.is_user_type() {
            (None, None)
        } else {
            let attr = match &self.event_of {
                EventOf::OnlyOne => None,
                EventOf::Id(info) => get_record_id::<T>(kind, data, info),
                EventOf::Identifier(all) => get_record_identifier::<T>(kind, data, *all),
            }
            .and_then(|id| self.ids.get(&id).copied())
            .unwrap_or(0);
            match self.parse_infos.get(attr as usize) {
                // The metadata reader refuses files without events; this never happens.
                None => return,
                Some(info) => (Some(attr), get_record_timestamp::<T>(kind, data, info)),
            }
        };
        let record = Record { window, start: body as u32, len: len as u32, kind, misc, attr };
        self.sorter.insert((time, place.0, place.1), record);
    }

    /// Inflates the compressed record at file offset `at` (perf record -z: a zstd stream over
    /// every compressed record, whose records may end in the next one) and puts the records it
    /// completes in the sorter, in a window of their own. Returns whether a round ended with
    /// records ready.
    fn inflate_records<T: ByteOrder>(
        &mut self,
        at: u64,
        window: u32,
        start: usize,
        size: usize,
        kind: u32,
    ) -> Result<bool, RecordError> {
        let bad =
            |why: &str| RecordError { offset: at, problem: Problem::Compressed { why: why.to_string() } };
        let held = self.windows.get(window).clone();
        let record = &held.map[start..start + size];
        let mut data = &record[8..];
        if kind == COMPRESSED2 {
            // perf 6.x: the compressed size, then the data and padding.
            let n = data.get(..8).map(T::read_u64).ok_or_else(|| bad("is too short"))?;
            data = data.get(8..8 + n as usize).ok_or_else(|| bad("claims more data than it holds"))?;
        }
        let dctx = self.inflate.get_or_insert_with(zstd_safe::DCtx::create);
        let mut input = zstd_safe::InBuffer::around(data);
        let mut chunk = vec![0u8; 1 << 16];
        // Until the input is used up and the output no longer fills the chunk: a full chunk
        // may leave output behind in the stream.
        loop {
            let mut out = zstd_safe::OutBuffer::around(&mut chunk[..]);
            dctx.decompress_stream(&mut out, &mut input)
                .map_err(|code| bad(&format!("does not inflate: {}", zstd_safe::get_error_name(code))))?;
            let n = out.pos();
            self.inflated.extend_from_slice(&chunk[..n]);
            let used_up = input.pos() == data.len();
            if used_up && n < chunk.len() {
                break;
            }
            if n == 0 && !used_up {
                return Err(bad("does not inflate"));
            }
        }
        // The whole records go to a window; the start of one cut by the end stays.
        let mut steps = Vec::new();
        let mut bytes: &[u8] = &self.inflated;
        let mut walk = Walk::new(0, bytes.len() as u64, self.endian == Endianness::BigEndian);
        while let Some(step) = walk.next(&mut bytes) {
            match step {
                Ok(step) => steps.push(step),
                Err(Stop::TooSmall { size, .. }) => {
                    return Err(bad(&format!("holds a record header of size {size}")))
                }
                // Continued in the next compressed record.
                Err(_) => break,
            }
        }
        let Some(whole) = steps.last().map(|s| s.next as usize) else { return Ok(false) };
        let rest = self.inflated.split_off(whole);
        let number = self.windows.push_inflated(std::mem::replace(&mut self.inflated, rest));
        let mut ready = false;
        for (index, step) in steps.iter().enumerate() {
            if step.kind == FINISHED_ROUND {
                ready |= self.sorter.finish_round();
            } else {
                self.add::<T>(
                    number,
                    step.at as usize,
                    step.size as usize,
                    step.kind,
                    step.misc,
                    (at, index as u32),
                );
            }
        }
        Ok(ready)
    }
}

/// A record's place in time: its time, then its file offset and its index in a compressed
/// record.
type Key = (Option<u64>, u64, u32);

/// Record keys (time, then place in the file) in rounds, handed out in order once no later round
/// can hold an earlier record: perf's FINISHED_ROUND contract.
#[derive(Default)]
struct Sorter {
    /// Records in order, ready to go.
    ready: std::collections::VecDeque<Record>,
    /// Records of the rounds not yet let out, in file order.
    waiting: Vec<(Key, Record)>,
    /// The latest key of the previous round and of this one.
    prev_max: Key,
    cur_max: Key,
}

impl Sorter {
    fn insert(&mut self, key: Key, r: Record) {
        self.cur_max = self.cur_max.max(key);
        self.waiting.push((key, r));
    }

    /// Ends a round: what is up to the previous round's latest key goes out. Returns whether
    /// records are ready.
    fn finish_round(&mut self) -> bool {
        let limit = self.prev_max;
        let (mut out, keep): (Vec<_>, Vec<_>) = self.waiting.drain(..).partition(|(k, _)| *k <= limit);
        out.sort_unstable_by_key(|(k, _)| *k);
        self.ready.extend(out.into_iter().map(|(_, r)| r));
        self.waiting = keep;
        self.prev_max = self.cur_max;
        !self.ready.is_empty()
    }

    /// Lets every record out.
    fn finish(&mut self) {
        self.waiting.sort_unstable_by_key(|(k, _)| *k);
        self.ready.extend(self.waiting.drain(..).map(|(_, r)| r));
    }

    /// The windows records not handed over lie in (with repeats).
    fn windows(&self) -> Vec<u32> {
        let ready = self.ready.iter().map(|r| r.window);
        ready.chain(self.waiting.iter().map(|(_, r)| r.window)).collect()
    }
}

/// Batches of records read on a thread of their own. A batch dropped lets go of the windows
/// only it held: the converting thread unmaps them (mapping them is the reader's work; handing
/// converted batches back for the reader to unmap held windows longer and saved no time, in
/// call-graph reports either).
pub struct Batches {
    next: crate::handoff::Receiver<Batch>,
}

impl Batches {
    /// The next batch; None after the last.
    pub fn next(&self) -> Option<Batch> {
        self.next.recv()
    }
}

/// Reads every record of a recording on a thread, handing them over in batches; the last
/// batch has `end` set.
pub fn read(mut reader: RecordReader) -> Batches {
    let (tx, next) = crate::handoff::queue::<Batch>(BATCHES_AHEAD);
    let reading = move || loop {
        let batch = reader.next_batch();
        let last = batch.end.is_some();
        // The converter went away (it stopped early): nothing more to read for.
        if tx.send(batch).is_err() || last {
            break;
        }
    };
    std::thread::Builder::new()
        .name("rperf-records".into())
        .spawn(reading)
        .expect("a thread to read records");
    Batches { next }
}

/// What the reader does, as it goes: how far it is, and repairs made on the way.
#[derive(Clone, Default)]
pub struct Reading {
    /// The read position, for progress display.
    pub position: crate::progress::ReadPosition,
    /// Repairs made to records while reading them, each said once.
    pub repairs: std::sync::Arc<std::sync::Mutex<Vec<Repaired>>>,
}

impl Reading {
    /// The repairs made so far, taken.
    pub fn take_repairs(&self) -> Vec<Repaired> {
        std::mem::take(&mut *self.repairs.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
