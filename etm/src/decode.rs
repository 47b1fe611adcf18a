//! Decoding a recording's ETM trace: its records in file order, the thread and mapping records
//! kept as they come, each AUX record's trace fed to OpenCSD, and each decoded element handed
//! on with the trace ID it came from. Instruction bytes come from the caller (`Sink::code`),
//! for the mapping the address lies in, in the thread the trace ID last said it runs.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::info::TraceUnit;
use crate::opencsd::{self, Callbacks, Tree, Unit};
use crate::recording::{EtmRecording, Mapping, Record, Threads};

pub use crate::opencsd::Element;

/// Element kinds (`ocsd_gen_trc_elem_t`) rperf looks at.
pub struct ElementKind;

impl ElementKind {
    pub const PE_CONTEXT: u32 = 4;
    pub const INSTR_RANGE: u32 = 5;
}

/// What decoding shares with those who ask while it runs: the threads so far, and the thread
/// each trace ID runs in.
#[derive(Default)]
pub struct State {
    pub threads: Threads,
    pub context: HashMap<u8, i32>,
}

impl State {
    /// The binary and file offset of `addr` in the context of trace `id`.
    pub fn locate(&self, id: u8, addr: u64) -> Option<(Mapping, u64)> {
        let m = self.threads.mapping(self.context.get(&id).copied(), addr)?;
        Some((m.clone(), addr - m.start + m.pgoff))
    }
}

/// Where an address lies in a trace's context: the mapping and the file offset.
pub type Locate<'a> = &'a dyn Fn(u64) -> Option<(Mapping, u64)>;

/// Who takes the elements and gives the code.
pub trait Sink {
    /// A decoded element of trace `id`; `locate` places addresses in that trace's context.
    fn element(&mut self, id: u8, element: &Element, locate: Locate<'_>);
    /// Fills `out` with the bytes of `mapping`'s file at `offset`; how many.
    fn code(&mut self, mapping: &Mapping, offset: u64, out: &mut [u8]) -> usize;
}

/// What decoding met.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub aux_records: u64,
    /// AUX records whose trace the file lacks (in part or whole).
    pub missing: u64,
    /// Times a stream was reset after data the decoder could not go on with.
    pub resets: u64,
}

/// One tree's callbacks: the element goes to the sink (the thread it names noted first); the
/// code is read from the sink for the mapping of the address.
struct Bridge<'a, 's> {
    state: &'a Mutex<State>,
    sink: &'a std::cell::RefCell<&'s mut dyn Sink>,
}

impl Callbacks for Bridge<'_, '_> {
    fn element(&mut self, id: u8, element: &Element) {
        if element.kind == ElementKind::PE_CONTEXT {
            if let Some(tid) = element.context_id {
                self.state.lock().unwrap_or_else(|e| e.into_inner()).context.insert(id, tid as i32);
            }
        }
        let state = self.state;
        let locate = |addr: u64| state.lock().unwrap_or_else(|e| e.into_inner()).locate(id, addr);
        self.sink.borrow_mut().element(id, element, &locate);
    }

    fn memory(&mut self, id: u8, address: u64, out: &mut [u8]) -> usize {
        let found = self.state.lock().unwrap_or_else(|e| e.into_inner()).locate(id, address);
        match found {
            Some((mapping, offset)) => self.sink.borrow_mut().code(&mapping, offset, out),
            None => 0,
        }
    }
}

fn decoder_unit(unit: &TraceUnit) -> Option<Unit> {
    let (arch_ver, core_prof) = (opencsd::ARCH_V8, opencsd::PROFILE_CORTEX_A);
    match unit {
        TraceUnit::Etmv4(r) => Some(Unit::Etmv4(opencsd::Etmv4Config {
            idr: [r.idr0, r.idr1, r.idr2, r.idr8, 0, 0, 0, 0, 0],
            configr: r.configr,
            traceidr: r.traceidr,
            arch_ver,
            core_prof,
        })),
        TraceUnit::Ete(r, devarch) => Some(Unit::Ete(opencsd::EteConfig {
            idr0: r.idr0,
            idr1: r.idr1,
            idr2: r.idr2,
            idr8: r.idr8,
            devarch: *devarch,
            configr: r.configr,
            traceidr: r.traceidr,
            arch_ver: opencsd::ARCH_AA64,
            core_prof,
        })),
        TraceUnit::Etmv3 => None,
    }
}

/// Decodes `rec`'s trace into `sink`, keeping `state` up to date as records come.
pub fn decode(rec: &EtmRecording, state: &Mutex<State>, sink: &mut dyn Sink) -> Result<Summary, String> {
    opencsd::available()?;
    let units: Vec<(u32, Unit)> =
        rec.units.iter().filter_map(|u| Some((u.cpu, decoder_unit(&u.unit)?))).collect();
    if units.is_empty() {
        return Err("the recording's trace units are ETMv3/PTM, which rperf does not decode".into());
    }
    let sink = std::cell::RefCell::new(sink);
    let shared = &sink;
    let bridge = move || Box::new(Bridge { state, sink: shared }) as Box<dyn Callbacks + '_>;
    let mut formatted: Option<Tree<'_>> = None;
    let mut raw: HashMap<u32, Tree<'_>> = HashMap::new();
    let mut summary = Summary::default();
    let mut failed = None;
    rec.each(|r| {
        let Record::Aux { cpu, data, raw: unformatted, missing } = &r else {
            state.lock().unwrap_or_else(|e| e.into_inner()).threads.apply(&r);
            return;
        };
        summary.aux_records += 1;
        summary.missing += u64::from(*missing);
        if data.is_empty() || failed.is_some() {
            return;
        }
        let tree = if *unformatted {
            let Some((_, unit)) = units.iter().find(|(c, _)| c == cpu) else { return };
            match raw.entry(*cpu) {
                std::collections::hash_map::Entry::Occupied(t) => t.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    match Tree::new(false, std::slice::from_ref(unit), bridge()) {
                        Ok(t) => v.insert(t),
                        Err(e) => return failed = Some(e),
                    }
                }
            }
        } else {
            if formatted.is_none() {
                let all: Vec<Unit> = units.iter().map(|(_, u)| u.clone()).collect();
                match Tree::new(true, &all, bridge()) {
                    Ok(t) => formatted = Some(t),
                    Err(e) => return failed = Some(e),
                }
            }
            formatted.as_mut().expect("made above")
        };
        summary.resets += u64::from(tree.feed(data));
    });
    if let Some(e) = failed {
        return Err(e);
    }
    formatted.iter_mut().chain(raw.values_mut()).for_each(Tree::end);
    Ok(summary)
}
