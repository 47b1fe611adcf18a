//! A report library session: its settings, the profile once read, the sample at hand and the
//! C structs that describe it (kept here, so that what callers are given stays valid until
//! their next call).

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::path::PathBuf;

use report::{Needs, OffCpuMode, Profile, ReportOptions};

use crate::ctypes::{CallChain, CallChainEntry, Event, FeatureSection, Mapping, Sample, Symbol};
use crate::ctypes::{TracingDataFormat, TracingFieldFormat};

/// A handle's state.
pub struct Session {
    pub opts: ReportOptions,
    /// Java methods compiled at run time are shown as the dex methods they were compiled from
    /// (simpleperf's default).
    pub merge_java: bool,
    /// Code without a symbol is named `BINARY[+hex]` rather than `unknown`.
    pub show_ip: bool,
    pub(crate) loaded: Option<Loaded>,
    facts: Option<report::Facts>,
    /// Strings handed out: kept for the session.
    pub(crate) strings: Strings,
    current: Current,
    /// Answers of calls that return a string or a struct, kept until the next such call.
    modes: CString,
    build_id: CString,
    feature: FeatureSection,
    /// The tracepoint data handed out for the sample at hand: its raw data, with zeros after
    /// it as far as any field of its format, or a string its `__data_loc` fields name, reaches.
    tracing: Vec<u8>,
    /// What earlier recordings of the handle told (`SetRecordFile` again): the feature
    /// sections handed out of them stay valid until the handle is destroyed.
    retired: Vec<report::Facts>,
    /// Frames of functions whose names match one of these are left out; a sample left with
    /// no frame is skipped (`RemoveMethod`).
    pub remove_methods: Vec<regex::Regex>,
    /// The answers of the lookups (`lookups.rs`), kept until the next such call.
    pub(crate) answers: crate::ctypes::Answers,
    /// Where the recording's ETM trace elements go (`SetETMCallback`).
    pub etm_callback: Option<crate::etm::EtmCallback>,
    /// The ETM trace was decoded (or there was none).
    pub(crate) etm_started: bool,
    /// What decoding shares: threads and the thread each trace ID runs in.
    pub(crate) etm_state: Option<std::sync::Arc<std::sync::Mutex<rperf_etm::State>>>,
    /// The recording's binaries, for `ConvertETMAddressToVaddrInFile`.
    pub(crate) etm_binaries: Option<rperf_etm::Binaries>,
}

/// The profile and where the caller is in it.
pub(crate) struct Loaded {
    pub(crate) profile: Profile,
    /// Its samples, read one at a time.
    samples: report::SampleReader,
    /// The sample at hand.
    pub(crate) sample: report::LoggedSample,
    /// Per section: the event as the library names it, with its tracepoint format.
    events: Vec<EventInfo>,
}

struct EventInfo {
    name: CString,
    fields: Vec<TracingFieldFormat>,
    size: u32,
    _names: Vec<CString>,
}

/// The C view of the sample at hand.
struct Current {
    sample: Sample,
    symbol: Symbol,
    event: Event,
    mappings: Vec<Mapping>,
    entries: Vec<CallChainEntry>,
    chain: CallChain,
    /// There is a sample at hand.
    at: bool,
}

#[derive(Default)]
pub(crate) struct Strings {
    dsos: HashMap<u32, CString>,
    funcs: HashMap<u32, CString>,
    pub(crate) comms: HashMap<u32, CString>,
    /// simpleperf's name for code without a symbol.
    pub(crate) unknown: CString,
    /// Its name for ART's old JIT debug files.
    jit_cache: CString,
}

impl Strings {
    pub(crate) fn get<K: std::hash::Hash + Eq>(
        map: &mut HashMap<K, CString>,
        key: K,
        make: impl FnOnce() -> String,
    ) -> *const c_char {
        map.entry(key).or_insert_with(|| c_string(make())).as_ptr()
    }
}

/// A C string of `s`, its NUL bytes (which a C string cannot hold) shown as `\0`.
pub fn c_string(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let s = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\\0");
        CString::new(s).expect("no NUL left")
    })
}

impl Default for Session {
    fn default() -> Self {
        let opts = ReportOptions {
            input: PathBuf::from("perf.data"),
            // One entry per address, named by the containing function (as simpleperf's
            // library names frames); ART's frames hidden unless asked for.
            inline: false,
            show_ip: false,
            show_art_frames: false,
            ..Default::default()
        };
        Session {
            opts,
            merge_java: true,
            show_ip: false,
            loaded: None,
            facts: None,
            strings: Strings {
                unknown: c"unknown".into(),
                jit_cache: c"[JIT cache]".into(),
                ..Default::default()
            },
            current: Current {
                sample: Sample::default(),
                symbol: Symbol::default(),
                event: Event::default(),
                mappings: Vec::new(),
                entries: Vec::new(),
                chain: CallChain { nr: 0, entries: std::ptr::null() },
                at: false,
            },
            modes: CString::default(),
            build_id: CString::default(),
            feature: FeatureSection { data: std::ptr::null(), data_size: 0 },
            tracing: Vec::new(),
            retired: Vec::new(),
            remove_methods: Vec::new(),
            answers: Default::default(),
            etm_callback: None,
            etm_started: false,
            etm_state: None,
            etm_binaries: None,
        }
    }
}

impl Session {
    /// Settings can change until samples are read.
    pub fn settable(&self, what: &str) -> Result<(), String> {
        match self.loaded {
            Some(_) => {
                Err(format!("{what}: samples were already read; set options before the first GetNextSample"))
            }
            None => Ok(()),
        }
    }

    /// Sets the record file; what was read of another is dropped.
    pub fn set_record_file(&mut self, path: PathBuf) -> Result<(), String> {
        self.settable("SetRecordFile")?;
        let facts = report::facts(&path).map_err(|e| e.to_string())?;
        self.opts.input = path;
        self.retired.extend(self.facts.replace(facts));
        Ok(())
    }

    pub(crate) fn facts(&mut self) -> Result<&report::Facts, String> {
        if self.facts.is_none() {
            self.facts = Some(report::facts(&self.opts.input).map_err(|e| e.to_string())?);
        }
        Ok(self.facts.as_ref().expect("set above"))
    }

    /// The off-CPU modes of the recording, comma-separated.
    pub fn off_cpu_modes(&mut self) -> Result<*const c_char, String> {
        let modes = if self.facts()?.off_cpu { "on-cpu,off-cpu,on-off-cpu,mixed-on-off-cpu" } else { "" };
        self.modes = c_string(modes.into());
        Ok(self.modes.as_ptr())
    }

    pub fn set_off_cpu_mode(&mut self, mode: &str) -> Result<(), String> {
        self.settable("SetTraceOffCpuMode")?;
        let m = OffCpuMode::parse(mode).ok_or_else(|| {
            format!(
                "SetTraceOffCpuMode: `{}`: use on-cpu, off-cpu, on-off-cpu or mixed-on-off-cpu",
                mode.escape_debug()
            )
        })?;
        if !self.facts()?.off_cpu {
            return Err(format!(
                "SetTraceOffCpuMode: {} was not recorded with --trace-offcpu",
                self.opts.input.display()
            ));
        }
        self.opts.trace_offcpu = Some(m);
        Ok(())
    }

    /// Reads the recording, on the first call that needs its samples.
    pub(crate) fn load(&mut self) -> Result<&mut Loaded, String> {
        if self.loaded.is_none() {
            let needs = Needs { samples: false, lines: false, places: true, callers: true };
            self.opts.show_ip = self.show_ip;
            self.opts.merge_java_methods = self.merge_java;
            let (profile, samples) = report::load_with(&self.opts, needs).map_err(|e| e.to_string())?;
            for w in &profile.warnings {
                let w = w.to_string();
                eprintln!("rperf report library: warning: {}", rperf_symbols::text::printable(&w));
            }
            let samples = samples.expect("samples are logged when places are asked for");
            let events =
                profile.sections.iter().map(|s| event_info(s, &profile.tracepoint_formats)).collect();
            self.loaded = Some(Loaded { profile, samples, sample: Default::default(), events });
        }
        Ok(self.loaded.as_mut().expect("loaded above"))
    }

    /// Moves to the next sample; null at the end.
    pub fn next_sample(&mut self) -> Result<*const Sample, String> {
        loop {
            let loaded = self.load()?;
            let more = loaded.samples.next_into(&mut loaded.sample);
            self.current.at = matches!(more, Ok(true));
            if !more.map_err(|e| e.to_string())? {
                return Ok(std::ptr::null());
            }
            // A sample whose every frame `RemoveMethod` removed is skipped.
            if self.describe() {
                return Ok(&self.current.sample);
            }
            self.current.at = false;
        }
    }

    /// Fills the C view of the sample at hand; false when no frame of it is left.
    fn describe(&mut self) -> bool {
        let loaded = self.loaded.as_ref().expect("loaded");
        let p = &loaded.profile;
        let (section, r, places) = (loaded.sample.section, loaded.sample.row, &loaded.sample.places);
        let strings = &mut self.strings;
        let cur = &mut self.current;
        let stack = r.stack as usize;
        let addrs = &p.stacks[stack];
        let origin = p.stack_origin.get(stack);
        let place_of = |k: usize| {
            let o = origin.and_then(|o| o.get(k)).copied().unwrap_or(k as u32) as usize;
            places.get(o).copied().unwrap_or_default()
        };
        cur.mappings.clear();
        cur.mappings.extend((0..addrs.len()).map(|k| match place_of(k).map {
            // Outside every mapping: the whole address space, as simpleperf's mapping of
            // unknown code spans it (a location then lies within its mapping).
            (0, 0, 0) => Mapping { start: 0, end: u64::MAX, pgoff: 0 },
            m => Mapping { start: m.0, end: m.1, pgoff: m.2 },
        }));
        cur.entries.clear();
        for (k, &a) in addrs.iter().enumerate() {
            let naming =
                Naming { show_ip: self.show_ip, merge_java: self.merge_java, remove: &self.remove_methods };
            let Some(mut symbol) = symbol(p, a, strings, &cur.mappings[k], naming) else { continue };
            if p.names.dsos[p.symbols.location(a).0 as usize].kind == report::DsoKind::Unknown {
                // Outside every mapping, the place is the address itself.
                symbol.vaddr_in_file = place_of(k).ip;
            }
            cur.entries.push(CallChainEntry { ip: place_of(k).ip, symbol });
        }
        let in_kernel = addrs.first().is_some_and(|&a| {
            let (dso, _) = p.symbols.location(a);
            p.names.dsos[dso as usize].kind == report::DsoKind::Kernel
        });
        let comm =
            Strings::get(&mut strings.comms, r.thread.comm, || p.names.comm(r.thread.comm).to_string());
        let (first, rest) = match cur.entries.split_first() {
            Some((f, _)) => (*f, 1),
            None if addrs.is_empty() => (CallChainEntry::default(), 0),
            None => return false,
        };
        cur.sample = Sample {
            ip: first.ip,
            pid: r.thread.pid as u32,
            tid: r.thread.tid as u32,
            thread_comm: comm,
            time: r.time,
            in_kernel: in_kernel as u32,
            cpu: r.cpu,
            period: r.weight,
        };
        cur.symbol = first.symbol;
        let entries = &cur.entries[rest.min(cur.entries.len())..];
        cur.chain = CallChain {
            nr: entries.len() as u32,
            entries: if entries.is_empty() { std::ptr::null() } else { entries.as_ptr() },
        };
        let ev = &loaded.events[section as usize];
        cur.event = Event {
            name: ev.name.as_ptr(),
            tracing_data_format: TracingDataFormat {
                size: ev.size,
                field_count: ev.fields.len() as u32,
                fields: if ev.fields.is_empty() { std::ptr::null() } else { ev.fields.as_ptr() },
            },
        };
        true
    }

    pub(crate) fn current(&self, what: &str) -> Result<(), String> {
        match self.current.at {
            true => Ok(()),
            false => Err(format!("{what}: no sample at hand; call GetNextSample first")),
        }
    }

    pub fn event(&self) -> Result<*const Event, String> {
        self.current("GetEventOfCurrentSample")?;
        Ok(&self.current.event)
    }

    pub fn symbol(&self) -> Result<*const Symbol, String> {
        self.current("GetSymbolOfCurrentSample")?;
        Ok(&self.current.symbol)
    }

    pub fn callchain(&self) -> Result<*const CallChain, String> {
        self.current("GetCallChainOfCurrentSample")?;
        Ok(&self.current.chain)
    }

    /// The sample's tracepoint data; null when it has none, or its event is no tracepoint
    /// (simpleperf records raw data for every event of a recording with tracepoints).
    ///
    /// simpleperf's scripts read each field at its offset in the data, and a `__data_loc`
    /// string where the data's own offset and length say, without bounds: the data handed out
    /// reaches as far as either does (the format's fields lie within a record's 64 KiB, a
    /// `__data_loc` within 128 KiB), zeros past the sample's own bytes.
    pub fn tracing_data(&mut self) -> Result<*const c_char, String> {
        self.current("GetTracingDataOfCurrentSample")?;
        let loaded = self.loaded.as_ref().expect("a sample is at hand");
        let raw = &loaded.sample.raw;
        let event = &loaded.events[loaded.sample.section as usize];
        if raw.is_empty() || event.fields.is_empty() {
            return Ok(std::ptr::null());
        }
        let mut reach = raw.len().max(event.size as usize);
        for f in event.fields.iter().filter(|f| f.is_dynamic != 0) {
            let at = f.offset as usize;
            if let Some(loc) = raw.get(at..at + 4) {
                let (offset, len) =
                    (u16::from_le_bytes([loc[0], loc[1]]), u16::from_le_bytes([loc[2], loc[3]]));
                reach = reach.max(usize::from(offset) + usize::from(len));
            }
        }
        self.tracing.clear();
        self.tracing.extend_from_slice(raw);
        // And one NUL more: a string read up to its NUL ends inside.
        self.tracing.resize(reach + 1, 0);
        Ok(self.tracing.as_ptr().cast())
    }

    /// The build id of a binary as recorded (`0x` and 40 hex digits), or "".
    pub fn build_id(&mut self, path: &str) -> Result<*const c_char, String> {
        let id = self.facts()?.build_ids.get(path).cloned();
        let text = match id {
            Some(b) if b.iter().any(|&x| x != 0) => {
                let mut padded = b.clone();
                padded.resize(padded.len().max(20), 0);
                format!("0x{}", padded.iter().map(|x| format!("{x:02x}")).collect::<String>())
            }
            _ => String::new(),
        };
        self.build_id = c_string(text);
        Ok(self.build_id.as_ptr())
    }

    /// A feature section of the recording by simpleperf's name for it; null when absent.
    pub fn feature(&mut self, name: &str) -> Result<*const FeatureSection, String> {
        let Some(id) = rperf_perfdata::feature::by_simpleperf_name(name) else { return Ok(std::ptr::null()) };
        let facts = self.facts()?;
        let Some(data) = facts.features.get(&id) else { return Ok(std::ptr::null()) };
        let (ptr, len) = (data.as_ptr(), data.len());
        self.feature = FeatureSection { data: ptr.cast(), data_size: len as u32 };
        Ok(&self.feature)
    }
}

/// How the library names frames.
struct Naming<'a> {
    show_ip: bool,
    merge_java: bool,
    /// Frames of functions whose names match one of these are left out (`RemoveMethod`).
    remove: &'a [regex::Regex],
}

/// The library's view of one frame address; None when it is left out.
fn symbol(
    p: &Profile,
    a: u32,
    strings: &mut Strings,
    mapping: &Mapping,
    naming: Naming<'_>,
) -> Option<Symbol> {
    let Naming { show_ip, merge_java, remove } = naming;
    let (mut dso, _) = p.symbols.location(a);
    let mut func = *p.symbols.funcs(a).last().expect("every address has a function");
    let mut vaddr = p.symbols.vaddr_in_file(a);
    let (mut start, mut len) = p.symbols.symbol_range(a);
    let merged = p.java_dex.get(&a);
    if let Some(&(d, f, s)) = merged {
        (dso, func, vaddr, start, len) = (d, f, s, s, 0);
    }
    let d = &p.names.dsos[dso as usize];
    // Merging Java methods, a compiled method with no dex method of its name, in one of the
    // files older ART versions wrote for debuggers (`TemporaryFile-XXXXXX`), is shown in
    // `[JIT cache]`, as simpleperf's newer library shows it.
    let dso_name = if merge_java
        && merged.is_none()
        && d.kind == report::DsoKind::File
        && d.exec_type() == report::ExecType::Jit
    {
        strings.jit_cache.as_ptr()
    } else {
        Strings::get(&mut strings.dsos, dso, || d.display_name().to_string())
    };
    let unnamed = p.symbols.is_unnamed(func);
    let shown = if unnamed && !show_ip { "unknown" } else { p.names.func(func).name.as_str() };
    if remove.iter().any(|r| r.is_match(shown)) {
        return None;
    }
    let name = if unnamed && !show_ip {
        strings.unknown.as_ptr()
    } else {
        Strings::get(&mut strings.funcs, func, || p.names.func(func).name.clone())
    };
    if unnamed {
        (start, len) = (vaddr, 0);
    }
    Some(Symbol {
        dso_name,
        vaddr_in_file: vaddr,
        symbol_name: name,
        symbol_addr: start,
        symbol_len: len,
        mapping,
    })
}

/// The library's event of a section: its event name (an off-CPU section's is the event its
/// samples came from) and tracepoint format.
fn event_info(s: &report::Section, formats: &[rperf_perfdata::tracing::EventFormat]) -> EventInfo {
    let name =
        s.name.strip_suffix(" (on-cpu time)").or(s.name.strip_suffix(" (off-cpu time)")).unwrap_or(&s.name);
    let format = (s.type_ == 2).then(|| formats.iter().find(|f| f.id == s.config)).flatten();
    let mut names = Vec::new();
    let mut fields = Vec::new();
    let mut size = 0;
    for f in format.map_or(&[][..], |f| &f.fields) {
        let n = c_string(f.name.clone());
        fields.push(TracingFieldFormat {
            name: n.as_ptr(),
            offset: f.offset,
            elem_size: f.elem_size,
            elem_count: f.elem_count,
            is_signed: f.signed as u32,
            is_dynamic: f.dynamic as u32,
        });
        names.push(n);
        // Within a record's size (`decode_formats` keeps no other field).
        let end = f.elem_size.checked_mul(f.elem_count).and_then(|n| n.checked_add(f.offset));
        size = size.max(end.unwrap_or(rperf_perfdata::tracing::MAX_RAW));
    }
    EventInfo { name: c_string(name.to_string()), fields, size, _names: names }
}
