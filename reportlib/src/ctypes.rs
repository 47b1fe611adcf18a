//! The structs the library hands out, with the layouts `simpleperf_report_lib.py` declares
//! (field for field, in order).

use std::ffi::{c_char, CString};

/// A sample (`SampleStruct`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Sample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub thread_comm: *const c_char,
    pub time: u64,
    pub in_kernel: u32,
    pub cpu: u32,
    pub period: u64,
}

impl Default for Sample {
    fn default() -> Self {
        Sample {
            ip: 0,
            pid: 0,
            tid: 0,
            thread_comm: std::ptr::null(),
            time: 0,
            in_kernel: 0,
            cpu: 0,
            period: 0,
        }
    }
}

/// One field of a tracepoint's data (`TracingFieldFormatStruct`).
#[repr(C)]
pub struct TracingFieldFormat {
    pub name: *const c_char,
    pub offset: u32,
    pub elem_size: u32,
    pub elem_count: u32,
    pub is_signed: u32,
    pub is_dynamic: u32,
}

/// A tracepoint's data format (`TracingDataFormatStruct`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TracingDataFormat {
    pub size: u32,
    pub field_count: u32,
    pub fields: *const TracingFieldFormat,
}

/// The event of a sample (`EventStruct`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Event {
    pub name: *const c_char,
    pub tracing_data_format: TracingDataFormat,
}

impl Default for Event {
    fn default() -> Self {
        let format = TracingDataFormat { size: 0, field_count: 0, fields: std::ptr::null() };
        Event { name: std::ptr::null(), tracing_data_format: format }
    }
}

/// The mapping that held a frame (`MappingStruct`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
}

/// A frame's binary and function (`SymbolStruct`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Symbol {
    pub dso_name: *const c_char,
    pub vaddr_in_file: u64,
    pub symbol_name: *const c_char,
    pub symbol_addr: u64,
    pub symbol_len: u64,
    pub mapping: *const Mapping,
}

impl Default for Symbol {
    fn default() -> Self {
        Symbol {
            dso_name: std::ptr::null(),
            vaddr_in_file: 0,
            symbol_name: std::ptr::null(),
            symbol_addr: 0,
            symbol_len: 0,
            mapping: std::ptr::null(),
        }
    }
}

/// A caller frame (`CallChainEntryStructure`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct CallChainEntry {
    pub ip: u64,
    pub symbol: Symbol,
}

/// The callers of a sample, innermost first (`CallChainStructure`).
#[repr(C)]
pub struct CallChain {
    pub nr: u32,
    pub entries: *const CallChainEntry,
}

/// A feature section's bytes (`FeatureSectionStructure`).
#[repr(C)]
pub struct FeatureSection {
    pub data: *const c_char,
    pub data_size: u32,
}

/// One counter of a sample's counter group (`EventCounterStructure`): its event's name, its
/// id and its running total.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventCounter {
    pub name: *const c_char,
    pub id: u64,
    pub count: u64,
}

/// A sample's counters (`EventCountersViewStructure`).
#[repr(C)]
pub struct EventCountersView {
    pub nr: usize,
    pub event_counter: *const EventCounter,
}

/// A binary and its build id (`BuildIdPairStructure`); a list of them ends with a null
/// `filename`.
#[repr(C)]
pub struct BuildIdPair {
    /// 20 bytes: the build id, zero-padded.
    pub build_id: *const u8,
    pub filename: *const c_char,
}

/// A binary and an offset in it (`DsoAddress`); `path` null when the address is in no binary.
#[repr(C)]
pub struct DsoAddress {
    pub path: *const c_char,
    pub offset: u64,
}

/// A thread (`Thread`): its process, its id and its name; `pid` -1 when unknown.
#[repr(C)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    pub comm: *const c_char,
}

/// What the lookups (`lookups.rs`) handed out, kept until the next call of the same function.
pub struct Answers {
    pub(crate) counters: Vec<EventCounter>,
    pub(crate) counters_view: EventCountersView,
    /// The recording's event names, by index in the file (for counters).
    pub(crate) event_names: Vec<CString>,
    pub(crate) build_ids: Vec<[u8; 20]>,
    pub(crate) build_id_names: Vec<CString>,
    pub(crate) build_id_pairs: Vec<BuildIdPair>,
    pub(crate) symbols: Vec<Symbol>,
    pub(crate) symbol_names: Vec<CString>,
    pub(crate) symbols_path: CString,
    pub(crate) thread_comm: CString,
    pub(crate) etm_path: CString,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            counters: Vec::new(),
            counters_view: EventCountersView { nr: 0, event_counter: std::ptr::null() },
            event_names: Vec::new(),
            build_ids: Vec::new(),
            build_id_names: Vec::new(),
            build_id_pairs: Vec::new(),
            symbols: Vec::new(),
            symbol_names: Vec::new(),
            symbols_path: CString::default(),
            thread_comm: CString::default(),
            etm_path: CString::default(),
        }
    }
}
