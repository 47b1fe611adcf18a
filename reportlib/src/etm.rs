//! A recording's ETM trace, decoded for `SetETMCallback`: each OpenCSD trace element goes to the
//! caller's function with its trace ID, as simpleperf's library hands them on. Decoding runs on
//! the first `GetNextSample`, before the recording's samples, and holds no borrow of the handle:
//! the callback may call the library back (`GetThread`, `ConvertETMAddressToVaddrInFile`),
//! which reads the threads and trace contexts decoding shares (`rperf_etm::State`).

use std::sync::{Arc, Mutex};

use rperf_etm::{Binaries, EtmRecording, Mapping, State};

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

struct Sink<'a> {
    callback: EtmCallback,
    binaries: &'a mut Binaries,
}

impl rperf_etm::Sink for Sink<'_> {
    fn element(&mut self, id: u8, element: &rperf_etm::Element, _: rperf_etm::decode::Locate<'_>) {
        (self.callback)(id, element.bytes.as_ptr().cast());
    }

    fn code(&mut self, mapping: &Mapping, offset: u64, out: &mut [u8]) -> usize {
        self.binaries.read(&mapping.path, offset, out)
    }
}

impl EtmJob {
    /// Decodes the trace into the callback; what went wrong is said on stderr.
    pub fn run(mut self) {
        let mut sink = Sink { callback: self.callback, binaries: &mut self.binaries };
        match rperf_etm::decode(&self.recording, &self.state, &mut sink) {
            Ok(s) if s.missing > 0 => eprintln!(
                "rperf report library: ETM: {} of {} AUX records point at trace the file lacks; that trace is left out",
                s.missing, s.aux_records
            ),
            Ok(_) => {}
            Err(e) => eprintln!("rperf report library: ETM: {e}"),
        }
    }
}
