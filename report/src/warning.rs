//! What a report warns of, by kind: what went wrong, where (the file, record, binary) and what
//! to do. The report goes on; the CLI and the report library print these (`Display`).

use std::path::PathBuf;

use crate::error::RecordError;

/// A warning of a report.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Warning {
    /// The file's header or records were repaired so that it could be read (what
    /// `perfdata::checked` and the record reader found and did).
    #[error(transparent)]
    Repaired(#[from] rperf_perfdata::checked::Repaired),
    /// The recording has no feature sections: it is still being recorded, or the recorder was
    /// killed before it finished.
    #[error(
        "{} has no feature sections: {}; {}",
        path.display(),
        if *recording {
            "it is still being recorded (its recorder holds it), so this report shows what was written up to the last flush; report it again once recording ends"
        } else {
            "its recording was cut short (the recorder was killed before it finished)"
        },
        if *made_here {
            "it was made on this machine since its last boot, so kernel frames are named from this kernel and binaries are read as they are now"
        } else {
            "kernel frames stay unnamed unless --kallsyms names a copy of the recording machine's /proc/kallsyms"
        }
    )]
    CutShort {
        /// The recording.
        path: PathBuf,
        /// It was made on this machine since its last boot.
        made_here: bool,
        /// Its recorder still holds it (rperf's recorder locks its file while it writes).
        recording: bool,
    },
    /// Reading stopped at a record that could not be read.
    #[error("{}: stopped reading after {records} records: {reason}; the report shows what was readable", path.display())]
    StoppedAt {
        /// The recording.
        path: PathBuf,
        /// Records read before it.
        records: u64,
        /// The record, and what is wrong with it.
        reason: RecordError,
    },
    /// Reading ended before the end of the data section.
    #[error("{}: reading stopped after {records} records without reaching the end of the file; the report shows what was read", path.display())]
    EndedEarly {
        /// The recording.
        path: PathBuf,
        /// Records read.
        records: u64,
    },
    /// Records whose contents could not be decoded.
    #[error("{count} records could not be decoded and were skipped")]
    Undecodable {
        /// How many.
        count: u64,
    },
    /// The kernel lost side-band records while recording.
    #[error(
        "the kernel lost {count} side-band records (mmap, comm, fork, exit) while recording: samples after them may be given to the wrong binary or thread (these are not lost samples)"
    )]
    LostSideband {
        /// How many.
        count: u64,
    },
    /// A JIT symbol file of this machine that is not read.
    #[error(
        "{path} {why}; its JIT symbols are not read (rperf report --force reads JIT files of any owner)"
    )]
    JitFileRefused {
        /// The file.
        path: String,
        /// Why it is not read.
        why: String,
    },
    /// A binary found that could not be read.
    #[error("cannot read {path}: {why}")]
    BinaryUnreadable {
        /// The file found for it.
        path: String,
        /// Why.
        why: String,
    },
    /// A binary found with another build id than the recording's.
    #[error(
        "build id mismatch: {} has another build id than the recorded {recorded}; not used for {dso} (pass --symfs with the right binary)",
        found.display()
    )]
    BuildIdMismatch {
        /// The file found.
        found: PathBuf,
        /// The recorded build id (hex).
        recorded: String,
        /// The binary as the recording names it.
        dso: String,
    },
    /// Most samples are in code without symbols.
    #[error("{percent:.0}% of the samples are in code without symbols, mostly in {}; {}", binaries.join(", "), remedies.join("; "))]
    Unnamed {
        /// Their share of the main section.
        percent: f64,
        /// The binaries that hold most of them.
        binaries: Vec<String>,
        /// What to do.
        remedies: Vec<&'static str>,
    },
    /// From the symbols crate: kernel symbols, debuginfod servers, the cache folder.
    #[error("{0}")]
    Symbols(String),
    /// Many call chains end at a caller in no mapping: frame pointers through code built
    /// without them.
    #[error(
        "{percent:.0}% of the {event} samples' call chains end at a return address in no mapping, as frame-pointer \
         call chains do through code built without frame pointers (most -O2 builds): their callers are cut \
         there; record with -g (DWARF unwinding) rather than -g fp, or build with -fno-omit-frame-pointer"
    )]
    BrokenChains {
        /// Their share of the section's samples.
        percent: f64,
        /// The section's event.
        event: String,
    },
}
