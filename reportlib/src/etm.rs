//! A recording's ETM trace, decoded for `SetETMCallback`: each OpenCSD trace element goes to the
//! caller's function with its trace ID, as simpleperf's library hands them on. Decoding runs on
//! the first `GetNextSample`, before the recording's samples, and holds no borrow of the handle:
//! the callback may call the library back (`GetThread`, `ConvertETMAddressToVaddrInFile`),
//! which reads the threads and trace contexts decoding shares (`rperf_etm::State`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rperf_etm::{EtmRecording, Mapping, State};
use rperf_symbols::{BinaryFinder, ElfInfo, Found};

/// The function `SetETMCallback` takes: called with each decoded element's trace ID and the
/// element (`ocsd_generic_trace_elem`), valid during the call.
pub type EtmCallback = extern "C" fn(trace_id: u8, element: *const std::ffi::c_void);

/// A decoding to run.
pub struct EtmJob {
    pub recording: EtmRecording,
    pub state: Arc<Mutex<State>>,
    pub callback: EtmCallback,
    pub binaries: Binaries,
}

/// The recording's binaries, found as reports find them (`SetSymfs`, by build id), each
/// loaded once.
pub struct Binaries {
    finder: BinaryFinder,
    build_ids: HashMap<String, Vec<u8>>,
    loaded: HashMap<String, Option<ElfInfo>>,
}

impl Binaries {
    pub fn new(finder: BinaryFinder, build_ids: HashMap<String, Vec<u8>>) -> Binaries {
        Binaries { finder, build_ids, loaded: HashMap::new() }
    }

    /// The binary recorded as `path`, when found.
    pub fn get(&mut self, path: &str) -> Option<&ElfInfo> {
        let (finder, ids) = (&self.finder, &self.build_ids);
        self.loaded
            .entry(path.to_string())
            .or_insert_with(|| {
                let id = ids.get(path).filter(|b| b.iter().any(|&x| x != 0));
                match finder.find(path, id.map(Vec::as_slice)) {
                    Found::File(file) => ElfInfo::load(&file).ok(),
                    _ => None,
                }
            })
            .as_ref()
    }

    /// `addr`'s place in the binary `mapping` maps: its virtual address in the file, where the
    /// binary is found, else its file offset.
    pub fn vaddr_in_file(&mut self, mapping: &Mapping, file_offset: u64) -> u64 {
        self.get(&mapping.path).and_then(|elf| elf.offset_to_vaddr(file_offset)).unwrap_or(file_offset)
    }
}

struct Sink<'a> {
    callback: EtmCallback,
    binaries: &'a mut Binaries,
}

impl rperf_etm::Sink for Sink<'_> {
    fn element(&mut self, id: u8, element: &rperf_etm::Element) {
        (self.callback)(id, element.bytes.as_ptr().cast());
    }

    fn code(&mut self, mapping: &Mapping, offset: u64, out: &mut [u8]) -> usize {
        let Some(elf) = self.binaries.get(&mapping.path) else { return 0 };
        let data = &elf.data[..];
        let Some(have) = usize::try_from(offset).ok().and_then(|o| data.get(o..)) else { return 0 };
        let n = have.len().min(out.len());
        out[..n].copy_from_slice(&have[..n]);
        n
    }
}

impl EtmJob {
    /// Decodes the trace into the callback; what went wrong is said on stderr. Gives back the
    /// binaries, for address lookups after it.
    pub fn run(mut self) -> Binaries {
        let mut sink = Sink { callback: self.callback, binaries: &mut self.binaries };
        match rperf_etm::decode(&self.recording, &self.state, &mut sink) {
            Ok(s) if s.missing > 0 => eprintln!(
                "rperf report library: ETM: {} of {} AUX records point at trace the file lacks; that trace is left out",
                s.missing, s.aux_records
            ),
            Ok(_) => {}
            Err(e) => eprintln!("rperf report library: ETM: {e}"),
        }
        self.binaries
    }
}
