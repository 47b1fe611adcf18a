//! Records read on a thread of their own, a batch at a time, so that reading the file (mapping
//! it, copying records out, putting them in time order) and converting the records (unwinding,
//! resolving addresses) run side by side.

use std::ops::Range;
use std::sync::mpsc::{sync_channel, Receiver};

use linux_perf_data::linux_perf_event_reader::{RawData, RawEventRecord, RecordParseInfo, RecordType};
use linux_perf_data::{PerfFile, PerfFileRecord, PerfRecordIter};

use crate::load::PatchedFile;

/// About this many bytes of records go in one batch.
const BATCH_BYTES: usize = 1 << 20;
/// Batches read ahead of the converter, at most: memory stays bounded by the batch size.
const BATCHES_AHEAD: usize = 2;

/// Records in file order as the reader gave them, their bytes in one buffer.
#[derive(Default)]
pub struct Batch {
    bytes: Vec<u8>,
    records: Vec<Record>,
    /// User records (perf's and simpleperf's own kinds) read since the last batch.
    pub user_records: u64,
    /// Set on the last batch: how reading ended (an error says why it stopped).
    pub end: Option<Result<(), String>>,
}

struct Record {
    attr: usize,
    kind: RecordType,
    misc: u16,
    info: RecordParseInfo,
    range: Range<usize>,
}

impl Batch {
    /// The kernel records of the batch, with the index of their event.
    pub fn records(&self) -> impl Iterator<Item = (usize, RawEventRecord<'_>)> + '_ {
        self.records.iter().map(|r| {
            let data = RawData::Single(&self.bytes[r.range.clone()]);
            (r.attr, RawEventRecord::new(r.kind, r.misc, data, r.info))
        })
    }

    fn full(&self) -> bool {
        self.bytes.len() >= BATCH_BYTES
    }
}

/// Reads every record of a recording on a thread, handing them over in batches; the last
/// batch has `end` set.
pub fn read(mut perf_file: PerfFile, mut iter: PerfRecordIter<PatchedFile>) -> Receiver<Batch> {
    let (tx, rx) = sync_channel::<Batch>(BATCHES_AHEAD);
    std::thread::spawn(move || {
        let mut batch = Batch::default();
        loop {
            match iter.next_record(&mut perf_file) {
                Ok(Some(PerfFileRecord::EventRecord { attr_index, record })) => {
                    let start = batch.bytes.len();
                    batch.bytes.extend_from_slice(&record.data.as_slice());
                    batch.records.push(Record {
                        attr: attr_index,
                        kind: record.record_type,
                        misc: record.misc,
                        info: record.parse_info,
                        range: start..batch.bytes.len(),
                    });
                }
                Ok(Some(PerfFileRecord::UserRecord(_))) => batch.user_records += 1,
                Ok(None) => batch.end = Some(Ok(())),
                Err(e) => batch.end = Some(Err(e.to_string())),
            }
            let last = batch.end.is_some();
            if last || batch.full() {
                // The converter went away (it stopped early): nothing more to read for.
                if tx.send(std::mem::take(&mut batch)).is_err() || last {
                    return;
                }
            }
        }
    });
    rx
}
