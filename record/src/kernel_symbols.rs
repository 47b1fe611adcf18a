//! The kernel's map and symbols while recording. Where the core kernel's symbols were kept
//! earlier in this boot (by a report, in rperf's cache folder, or perf's copy of them), they are
//! searched in place, and /proc/kallsyms is read only when a sample's kernel address lies
//! outside them (a module's, a BPF program's). Otherwise /proc/kallsyms is read beside the
//! recording, on a thread of its own (the kernel takes tens of milliseconds of CPU to format
//! it, which would otherwise delay the command's start), into a compact table of its text
//! symbols. The kernel's MMAP record is written as soon as the kernel's start is known; its
//! length is patched in once `_etext` is, and the symbols the samples hit are stored when the
//! recording ends.

use std::collections::BTreeSet;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

use rperf_symbols::kallsyms::{self, TextTable};
use rperf_symbols::kallsyms_cache::{self, RunningKernel};

use crate::records::{RecordBuilder, SampleId};
use crate::writer::PerfDataWriter;
use crate::Error;

/// The kernel's length until `_etext` is known (and when it never is).
const PROVISIONAL_LEN: u64 = 64 << 20;

/// Where the length lies in an MMAP record: after the header, pid, tid and start.
const MMAP_LEN_AT: u64 = 8 + 4 + 4 + 8;

pub(crate) struct KernelSymbols {
    reading: Option<JoinHandle<std::io::Result<TextTable>>>,
    /// The core kernel's symbols kept earlier in this boot, with `_text`: while every kernel
    /// address of the samples is among them, /proc/kallsyms is not read.
    kept: Option<(RunningKernel, u64)>,
    /// Where the kernel's MMAP record lies in the data section, and the start it gives.
    map_at: Option<(u64, u64)>,
}

/// Reads /proc/kallsyms on a thread of its own; `start` hears where the kernel's code starts
/// (or why there are no kernel addresses) as soon as the first lines say.
fn read_kallsyms(
    start: Option<SyncSender<Result<Option<u64>, String>>>,
) -> std::io::Result<JoinHandle<std::io::Result<TextTable>>> {
    std::thread::Builder::new().name("rperf-kallsyms".into()).spawn(move || {
        let file = std::fs::File::open("/proc/kallsyms").inspect_err(|e| {
            if let Some(tell) = &start {
                tell.send(Err(format!("cannot read /proc/kallsyms: {e}"))).ok();
            }
        })?;
        TextTable::read(std::io::BufReader::with_capacity(1 << 16, file), |at| {
            if let Some(tell) = &start {
                tell.send(Ok(at)).ok();
            }
        })
    })
}

impl KernelSymbols {
    /// The kernel's start from the symbols kept in this boot, when there are; else starts
    /// reading /proc/kallsyms and waits only for its first lines: the kernel's start, or why
    /// kernel symbols are not available (a note for the user).
    pub(crate) fn start() -> (KernelSymbols, Result<u64, String>) {
        // Only while the kernel shows this user its addresses, at the place the kept ones say.
        if let (Some(kept), Some(running)) = (RunningKernel::kept(), kallsyms_cache::running_text()) {
            if let Some(start) = kept.kept_text_start().filter(|&s| s == running) {
                return (KernelSymbols { reading: None, kept: Some((kept, start)), map_at: None }, Ok(start));
            }
        }
        let (tell, told) = std::sync::mpsc::sync_channel(1);
        let reading = match read_kallsyms(Some(tell)) {
            Ok(handle) => handle,
            Err(e) => {
                return (
                    KernelSymbols { reading: None, kept: None, map_at: None },
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
        (KernelSymbols { reading: Some(reading), kept: None, map_at: None }, start)
    }

    /// Starts reading /proc/kallsyms beside the recording once a sample's kernel address lies
    /// outside the kept symbols (a module's, a BPF program's), which do not name it.
    pub(crate) fn follow(&mut self, hits: &BTreeSet<u64>) {
        let span: Vec<u64> = hits.first().into_iter().chain(hits.last()).copied().collect();
        if self.reading.is_none() && self.kept.as_ref().is_some_and(|(kept, ..)| !kept.kept_covers(&span)) {
            self.reading = read_kallsyms(None).ok();
        }
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
        self.follow(hits);
        if let Some(reading) = self.reading.take() {
            let Some(table) = reading.join().ok().and_then(Result::ok) else { return Ok(None) };
            self.patch_length(table.text_end, writer)?;
            return Ok((!table.is_empty()).then(|| table.snapshot(hits)));
        }
        let Some((kept, start)) = &self.kept else { return Ok(None) };
        let end = kept.kept_text_end();
        let snapshot = kept.kept_snapshot(hits, Some(*start), end);
        self.patch_length(end, writer)?;
        Ok(snapshot)
    }

    /// Gives the kernel's MMAP record the length up to `end` (`_etext`).
    fn patch_length(&self, end: Option<u64>, writer: &mut PerfDataWriter) -> Result<(), Error> {
        match (self.map_at, end) {
            (Some((at, start)), Some(end)) if end > start => {
                writer.patch(at + MMAP_LEN_AT, &(end - start).to_ne_bytes())
            }
            _ => Ok(()),
        }
    }
}
