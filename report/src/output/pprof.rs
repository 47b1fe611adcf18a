//! pprof output: a gzipped profile.proto (github.com/google/pprof/proto/profile.proto), the
//! format of `go tool pprof` and of pprof-based backends (Pyroscope, Parca, Cloud Profiler).
//!
//! Each distinct frame address is a location in its binary's mapping; inline frames are the
//! location's lines, innermost first. Each (thread, stack) is a sample with pid, tid and thread
//! labels. Every event contributes two values: its sample count and its event count.

use std::collections::HashMap;
use std::io::{self, Write};

use prost::Message;

use crate::model::ExecType;
use crate::options::ReportOptions;
use crate::profile::Profile;

/// The messages of profile.proto that rperf writes (field numbers as in the schema).
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// The string table: index 0 is the empty string, as the format requires.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        Strings { table: vec![String::new()], index: HashMap::from([(String::new(), 0)]) }
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// pprof's name and unit for an event's counts.
fn value_type(name: &str, time_in_ns: bool) -> (&str, &'static str) {
    match name {
        "cpu-clock" | "task-clock" => ("cpu", "nanoseconds"),
        _ if time_in_ns => ("wall", "nanoseconds"),
        _ => (name, "count"),
    }
}

/// A count from the file as profile.proto's int64: counts past its range are held at the top.
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The profile being built, with its tables: each mapping, location and function once.
struct Builder<'a> {
    p: &'a Profile,
    inline: bool,
    st: Strings,
    out: proto::Profile,
    mappings: HashMap<u32, u64>,
    locations: HashMap<u32, u64>,
    functions: HashMap<u32, u64>,
}

/// Builds the profile.
fn build(p: &Profile, opts: &ReportOptions) -> proto::Profile {
    let mut b = Builder {
        p,
        inline: opts.inline,
        st: Strings::new(),
        out: proto::Profile::default(),
        mappings: HashMap::new(),
        locations: HashMap::new(),
        functions: HashMap::new(),
    };
    let events: Vec<_> = p.shown_sections().collect();
    b.sample_types(&events);
    // Recordings with Java methods say how each frame's code ran, innermost first, in a label
    // (pprof has no per-frame attributes).
    let java = p.stack_exec.iter().flatten().any(|t| *t != ExecType::Native);
    // The labels' keys come first in the string table.
    for key in ["pid", "tid", "thread"].into_iter().chain(java.then_some("execution_types")) {
        b.st.id(key);
    }
    for (ei, e) in events.iter().enumerate() {
        for c in &e.stacks {
            let sample = b.sample(ei, c, java);
            b.out.sample.push(sample);
        }
    }
    let Builder { mut st, mut out, .. } = b;
    // Samples in a stable order: heaviest first.
    out.sample.sort_by(|a, b| {
        let total = |s: &proto::Sample| s.value.iter().fold(0i64, |t, v| t.saturating_add(*v));
        total(b).cmp(&total(a)).then(a.location_id.cmp(&b.location_id))
    });
    let (first, last) = p.info.time_range;
    out.duration_nanos = clamp(last.saturating_sub(first));
    // perf.data has no wall-clock start; the recording ended about when the file was written.
    if let Some(t) = p.info.written.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()) {
        out.time_nanos = (t.as_nanos() as i64).saturating_sub(out.duration_nanos);
    }
    if let Some(cmd) = &p.info.cmdline {
        out.comment.push(st.id(&format!("recorded with: {cmd}")));
    }
    out.string_table = st.table;
    out
}

impl Builder<'_> {
    /// Two values per event: its samples, and its weight in its unit.
    fn sample_types(&mut self, events: &[&crate::profile::Section]) {
        let st = &mut self.st;
        for e in events {
            let (name, unit) = value_type(&e.name, e.time_in_ns());
            self.out.sample_type.push(proto::ValueType { r#type: st.id("samples"), unit: st.id("count") });
            self.out.sample_type.push(proto::ValueType { r#type: st.id(name), unit: st.id(unit) });
        }
        if let Some(e) = events.first() {
            let (name, unit) = value_type(&e.name, e.time_in_ns());
            self.out.period_type = Some(proto::ValueType { r#type: st.id(name), unit: st.id(unit) });
            self.out.period = clamp(e.weight / e.samples.max(1));
            self.out.default_sample_type = st.id(name);
        }
    }

    /// One distinct stack of event `ei`, with its thread's labels.
    fn sample(&mut self, ei: usize, c: &crate::profile::StackCount, java: bool) -> proto::Sample {
        let p = self.p;
        let mut sample = proto::Sample { value: vec![0; self.out.sample_type.len()], ..Default::default() };
        sample.value[2 * ei] = clamp(c.samples);
        sample.value[2 * ei + 1] = clamp(c.weight);
        // Off-CPU time ends in a frame of its own, as in the stack outputs.
        let marker = if c.off_cpu { p.off_cpu_marker } else { None };
        if let Some(m) = marker {
            sample.location_id.push(self.off_cpu_location(m));
        }
        for &a in &p.stacks[c.stack as usize] {
            sample.location_id.push(self.location(a));
        }
        let (comm, pid, tid) = (c.thread.comm, c.thread.pid, c.thread.tid);
        let st = &mut self.st;
        sample.label = vec![
            proto::Label { key: st.id("pid"), num: i64::from(pid), ..Default::default() },
            proto::Label { key: st.id("tid"), num: i64::from(tid), ..Default::default() },
            proto::Label { key: st.id("thread"), str: st.id(p.names.comm(comm)), ..Default::default() },
        ];
        if java {
            let marker = marker.map(|_| ExecType::Native.name());
            let types: Vec<&str> =
                marker.into_iter().chain(p.stack_exec[c.stack as usize].iter().map(|t| t.name())).collect();
            let str = st.id(&types.join(","));
            sample.label.push(proto::Label { key: st.id("execution_types"), str, ..Default::default() });
        }
        sample
    }

    /// The location of the off-CPU marker frame (function `m`).
    fn off_cpu_location(&mut self, m: u32) -> u64 {
        if let Some(&id) = self.locations.get(&u32::MAX) {
            return id;
        }
        let dso = self.p.names.funcs[m as usize].dso;
        let mapping_id = match self.mappings.get(&dso) {
            Some(&id) => id,
            None => {
                let id = self.mappings.len() as u64 + 1;
                let filename = self.st.id("[off-cpu]");
                self.out.mapping.push(proto::Mapping {
                    id,
                    filename,
                    has_functions: true,
                    ..Default::default()
                });
                self.mappings.insert(dso, id);
                id
            }
        };
        let function_id = match self.functions.get(&m) {
            Some(&id) => id,
            None => {
                let id = self.functions.len() as u64 + 1;
                let name = self.st.id("[off-cpu]");
                self.out.function.push(proto::Function { id, name, system_name: name, filename: 0 });
                self.functions.insert(m, id);
                id
            }
        };
        let id = self.locations.len() as u64 + 1;
        let line = vec![proto::Line { function_id, line: 0 }];
        self.out.location.push(proto::Location { id, mapping_id, address: 0, line });
        self.locations.insert(u32::MAX, id);
        id
    }

    /// The location of frame address `a`: its mapping, address, and functions (inlined ones
    /// first) with their lines.
    fn location(&mut self, a: u32) -> u64 {
        if let Some(&id) = self.locations.get(&a) {
            return id;
        }
        let p = self.p;
        let (dso, address) = p.symbols.location(a);
        let mapping_id = self.mapping(dso);
        let places = p.symbols.places(a);
        let line = p
            .symbols
            .funcs(a)
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                let (file, line) = places.get(i).copied().unwrap_or((0, 0));
                proto::Line { function_id: self.function(f, file), line: i64::from(line) }
            })
            .collect();
        let id = self.locations.len() as u64 + 1;
        self.out.location.push(proto::Location { id, mapping_id, address, line });
        self.locations.insert(a, id);
        id
    }

    fn mapping(&mut self, dso: u32) -> u64 {
        if let Some(&id) = self.mappings.get(&dso) {
            return id;
        }
        let d = &self.p.names.dsos[dso as usize];
        let build_id: String = d.build_id.iter().flatten().map(|b| format!("{b:02x}")).collect();
        let id = self.mappings.len() as u64 + 1;
        self.out.mapping.push(proto::Mapping {
            id,
            memory_start: 0,
            memory_limit: u64::MAX,
            file_offset: 0,
            filename: self.st.id(d.display_name()),
            build_id: self.st.id(&build_id),
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            has_inline_frames: self.inline,
        });
        self.mappings.insert(dso, id);
        id
    }

    /// Function `f`, named in source file `file` (an index into the profile's files plus one;
    /// 0 for none).
    fn function(&mut self, f: u32, file: u32) -> u64 {
        if let Some(&id) = self.functions.get(&f) {
            return id;
        }
        let p = self.p;
        let func = &p.names.funcs[f as usize];
        let filename = match file {
            0 => 0,
            id => self.st.id(&p.names.files[id as usize - 1]),
        };
        let name = self.st.id(&func.name);
        let system_name = func.system.as_deref().map_or(name, |s| self.st.id(s));
        let id = self.functions.len() as u64 + 1;
        self.out.function.push(proto::Function { id, name, system_name, filename });
        self.functions.insert(f, id);
        id
    }
}

/// Writes the gzipped profile.
pub fn write(out: &mut dyn Write, p: &Profile, opts: &ReportOptions) -> io::Result<()> {
    let bytes = build(p, opts).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
