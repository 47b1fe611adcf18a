//! The kernel's map and symbols while recording. /proc/kallsyms is read beside the recording,
//! on a thread of its own (the kernel takes tens of milliseconds to format it, which would
//! otherwise delay the command's start), into a compact table of its text symbols. The kernel's
//! MMAP record is written as soon as the first lines give the kernel's start; its length is
//! patched in when the reading has found `_etext`, and the symbols the samples hit are stored
//! when the recording ends.

use std::collections::BTreeSet;
use std::thread::JoinHandle;

use rperf_symbols::kallsyms::{self, TextTable};

use crate::records::{RecordBuilder, SampleId};
use crate::writer::PerfDataWriter;
use crate::Error;

/// The kernel's length until `_etext` is known (and when it never is).
const PROVISIONAL_LEN: u64 = 64 << 20;

/// Where the length lies in an MMAP record: after the header, pid, tid and start.
const MMAP_LEN_AT: u64 = 8 + 4 + 4 + 8;

pub(crate) struct KernelSymbols {
    reading: Option<JoinHandle<std::io::Result<TextTable>>>,
    /// Where the kernel's MMAP record lies in the data section, and the start it gives.
    map_at: Option<(u64, u64)>,
}

impl KernelSymbols {
    /// Starts reading /proc/kallsyms and waits only for its first lines: the kernel's start,
    /// or why kernel symbols are not available (a note for the user).
    pub(crate) fn start() -> (KernelSymbols, Result<u64, String>) {
        let (tell, told) = std::sync::mpsc::sync_channel(1);
        let spawned = std::thread::Builder::new().name("rperf-kallsyms".into()).spawn(move || {
            let file = std::fs::File::open("/proc/kallsyms").inspect_err(|e| {
                tell.send(Err(format!("cannot read /proc/kallsyms: {e}"))).ok();
            })?;
            TextTable::read(std::io::BufReader::with_capacity(1 << 16, file), |start| {
                tell.send(Ok(start)).ok();
            })
        });
        let reading = match spawned {
            Ok(handle) => handle,
            Err(e) => {
                return (
                    KernelSymbols { reading: None, map_at: None },
                    Err(format!("cannot read /proc/kallsyms: {e}")),
                )
            }
        };
        let start = match told.recv() {
            Ok(Ok(Some(start))) => Ok(start),
            Ok(Ok(None)) => Err(kallsyms::hidden_reason()),
            Ok(Err(why)) => Err(why),
            Err(_) => Err("cannot read /proc/kallsyms: its reader stopped".into()),
        };
        (KernelSymbols { reading: Some(reading), map_at: None }, start)
    }

    /// Writes the kernel's MMAP record, with a provisional length until `finish`.
    pub(crate) fn write_map(
        &mut self,
        start: u64,
        writer: &mut PerfDataWriter,
        builder: &RecordBuilder,
    ) -> Result<(), Error> {
        let sid = SampleId { pid: u32::MAX, tid: 0, ..Default::default() };
        let at = writer.write_record_placed(&builder.kernel_mmap(start, PROVISIONAL_LEN, start, &sid))?;
        self.map_at = Some((at, start));
        Ok(())
    }

    /// Waits for the reading (long done by the end of most recordings), gives the kernel's
    /// MMAP record its length, and returns the kallsyms lines that name `hits`.
    pub(crate) fn finish(
        &mut self,
        hits: &BTreeSet<u64>,
        writer: &mut PerfDataWriter,
    ) -> Result<Option<String>, Error> {
        let Some(table) = self.reading.take().and_then(|h| h.join().ok()).and_then(Result::ok) else {
            return Ok(None);
        };
        if let (Some((at, start)), Some(end)) = (self.map_at, table.text_end) {
            if end > start {
                writer.patch(at + MMAP_LEN_AT, &(end - start).to_ne_bytes())?;
            }
        }
        Ok((!table.is_empty()).then(|| table.snapshot(hits)))
    }
}
