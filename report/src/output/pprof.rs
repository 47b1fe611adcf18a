//! pprof output: a gzipped profile.proto (github.com/google/pprof/proto/profile.proto), the
//! format of `go tool pprof` and of pprof-based backends (Pyroscope, Parca, Cloud Profiler).
//!
//! Each distinct frame address is a location in its binary's mapping; inline frames are the
//! location's lines, innermost first. Each (thread, stack) is a sample with pid, tid and thread
//! labels. Every event contributes its sample count and its event count; a time-weighted
//! (off-CPU) section contributes its time as `wall`, split into `cpu` and `off-cpu`.
//!
//! Mappings are the binaries' code as the recording mapped it (the first process that mapped
//! each; start, limit and file offset), and each location's address is its run-time address
//! there, so that `go tool pprof -list`, `-disasm` and `-symbolize` find the code in the binary.
//! The main binary (the most sampled executable) comes first.

use std::collections::HashMap;
use std::io::{self, Write};

use prost::Message;

use crate::model::{DsoKind, ExecType};
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

/// What a value of a sample counts, of one (thread, stack) of a section.
#[derive(Clone, Copy)]
enum Column {
    Samples,
    Weight,
    /// Time on the CPU (samples not off the CPU).
    OnCpu,
    /// Time off the CPU.
    OffCpu,
}

impl Column {
    fn of(self, c: &crate::profile::StackCount) -> u64 {
        match self {
            Column::Samples => c.samples,
            Column::Weight => c.weight,
            Column::OnCpu if !c.off_cpu => c.weight,
            Column::OffCpu if c.off_cpu => c.weight,
            Column::OnCpu | Column::OffCpu => 0,
        }
    }
}

/// A section's values: what each counts, with pprof's name and unit for it.
type Columns<'a> = Vec<(Column, &'a str, &'static str)>;

/// A section's values, with pprof's name and unit for each; the weight column first after the
/// sample count. A time-weighted section gives its time as `wall`, split into `cpu` and
/// `off-cpu` when it holds both.
fn columns(e: &crate::profile::Section) -> Columns<'_> {
    let samples = (Column::Samples, "samples", "count");
    if !e.time_in_ns() {
        let (name, unit) = value_type(&e.name, false);
        return vec![samples, (Column::Weight, name, unit)];
    }
    let off = e.stacks.iter().any(|c| c.off_cpu);
    let on = e.stacks.iter().any(|c| !c.off_cpu);
    match (on, off) {
        (true, true) => vec![
            samples,
            (Column::Weight, "wall", "nanoseconds"),
            (Column::OnCpu, "cpu", "nanoseconds"),
            (Column::OffCpu, "off-cpu", "nanoseconds"),
        ],
        (false, true) => vec![samples, (Column::Weight, "off-cpu", "nanoseconds")],
        _ => vec![samples, (Column::Weight, "cpu", "nanoseconds")],
    }
}

/// A count from the file as profile.proto's int64: counts past its range are held at the top.
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The profile being built, with its tables: each location and function once; mappings are
/// made once every location is known (`place_mappings`).
struct Builder<'a> {
    p: &'a Profile,
    st: Strings,
    out: proto::Profile,
    /// Each section's values, and where its first is in a sample's values.
    columns: Vec<(usize, Columns<'a>)>,
    locations: HashMap<u32, u64>,
    /// Per location (in order): its binary and its place there (`Symbolized::location`).
    placed: Vec<(u32, u64)>,
    /// Per location: every function of it has a name from a symbol.
    named: Vec<bool>,
    /// Samples per binary whose stacks hold it, for telling the main binary.
    dso_samples: HashMap<u32, u64>,
    functions: HashMap<u32, u64>,
}

/// Builds the profile.
fn build(p: &Profile) -> proto::Profile {
    let mut b = Builder {
        p,
        st: Strings::new(),
        out: proto::Profile::default(),
        columns: Vec::new(),
        locations: HashMap::new(),
        placed: Vec::new(),
        named: Vec::new(),
        dso_samples: HashMap::new(),
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
    b.place_mappings();
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

impl<'a> Builder<'a> {
    /// The values of each event (`columns`).
    fn sample_types(&mut self, events: &[&'a crate::profile::Section]) {
        let st = &mut self.st;
        for e in events {
            let cols = columns(e);
            self.columns.push((self.out.sample_type.len(), cols.clone()));
            for (_, name, unit) in cols {
                self.out.sample_type.push(proto::ValueType { r#type: st.id(name), unit: st.id(unit) });
            }
        }
        if let (Some(e), Some((_, cols))) = (events.first(), self.columns.first()) {
            let (_, name, unit) = cols[1];
            self.out.period_type = Some(proto::ValueType { r#type: st.id(name), unit: st.id(unit) });
            self.out.period = clamp(e.weight / e.samples.max(1));
            self.out.default_sample_type = st.id(name);
        }
    }

    /// One distinct stack of event `ei`, with its thread's labels.
    fn sample(&mut self, ei: usize, c: &crate::profile::StackCount, java: bool) -> proto::Sample {
        let p = self.p;
        let mut sample = proto::Sample { value: vec![0; self.out.sample_type.len()], ..Default::default() };
        let (first, cols) = &self.columns[ei];
        for (k, (col, _, _)) in cols.iter().enumerate() {
            sample.value[first + k] = clamp(col.of(c));
        }
        let mut dsos: Vec<u32> =
            p.stacks[c.stack as usize].iter().map(|&a| p.symbols.location(a).0).collect();
        dsos.sort_unstable();
        dsos.dedup();
        for d in dsos {
            *self.dso_samples.entry(d).or_default() += c.samples;
        }
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
        let id = self.out.location.len() as u64 + 1;
        let line = vec![proto::Line { function_id, line: 0 }];
        self.out.location.push(proto::Location { id, mapping_id: 0, address: 0, line });
        self.placed.push((dso, 0));
        self.named.push(true);
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
        let (dso, place) = p.symbols.location(a);
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
        let id = self.out.location.len() as u64 + 1;
        self.out.location.push(proto::Location { id, mapping_id: 0, address: 0, line });
        self.placed.push((dso, place));
        self.named.push(!p.symbols.funcs(a).iter().any(|&f| p.symbols.is_unnamed(f)));
        self.locations.insert(a, id);
        id
    }

    /// The main binary: the executable (not a shared library) in the most samples.
    fn main_binary(&self) -> Option<u32> {
        let p = self.p;
        self.dso_samples
            .iter()
            .filter(|(&d, _)| {
                let dso = &p.names.dsos[d as usize];
                let file = dso.path.rsplit('/').next().unwrap_or("");
                dso.kind == DsoKind::File && !file.contains(".so") && !dso.path.starts_with('[')
            })
            .max_by_key(|(&d, &n)| (n, std::cmp::Reverse(d)))
            .map(|(&d, _)| d)
    }

    /// Makes the mappings and gives each location its mapping and run-time address. A binary's
    /// place (a file offset) lies in one of its recorded executable mappings, where its address
    /// is the mapping's start plus its distance from the mapping's file offset; kernel and JIT
    /// places are addresses already. Places outside every recorded mapping get a mapping of
    /// their own in which address, place and file offset coincide.
    fn place_mappings(&mut self) {
        let p = self.p;
        let main = self.main_binary();
        // Mappings by (binary, its recorded mapping or None), in the order they are met, the
        // main binary's first.
        let mut keys: Vec<(u32, Option<usize>)> = Vec::new();
        let mut index: HashMap<(u32, Option<usize>), usize> = HashMap::new();
        let mut of_location = Vec::with_capacity(self.placed.len());
        let order = self
            .placed
            .iter()
            .enumerate()
            .filter(|(_, (d, _))| Some(*d) == main)
            .chain(self.placed.iter().enumerate().filter(|(_, (d, _))| Some(*d) != main));
        for (l, &(dso, place)) in order {
            let d = &p.names.dsos[dso as usize];
            let offsets = matches!(d.kind, DsoKind::File | DsoKind::Vdso | DsoKind::Dex);
            let seg = d.mapped.iter().position(|&(s, e, o)| match offsets {
                true => place >= o && place - o < e - s,
                false => place >= s && place < e,
            });
            let key = (dso, seg);
            let m = *index.entry(key).or_insert_with(|| {
                keys.push(key);
                keys.len() - 1
            });
            let address = match (seg, offsets) {
                (Some(k), true) => d.mapped[k].0 + (place - d.mapped[k].2),
                _ => place,
            };
            of_location.push((l, m, address));
        }
        // Each mapping's range, and what its locations tell of symbols.
        let mut ranges = vec![(u64::MAX, 0u64); keys.len()];
        let mut named = vec![true; keys.len()];
        let mut files = vec![false; keys.len()];
        let mut lines = vec![false; keys.len()];
        let mut inlines = vec![false; keys.len()];
        for &(l, m, address) in &of_location {
            let loc = &mut self.out.location[l];
            loc.mapping_id = m as u64 + 1;
            loc.address = address;
            ranges[m] = (ranges[m].0.min(address), ranges[m].1.max(address.saturating_add(1)));
            inlines[m] |= loc.line.len() > 1;
            for line in &loc.line {
                let f = &self.out.function[line.function_id as usize - 1];
                files[m] |= f.filename != 0;
                lines[m] |= line.line > 0;
            }
            named[m] &= self.named.get(l).copied().unwrap_or(true);
        }
        for (m, &(dso, seg)) in keys.iter().enumerate() {
            let d = &p.names.dsos[dso as usize];
            let (start, limit, offset) = match seg {
                // From where the file's start lies, as the binary's loader mapped it: readers
                // that place symbols by the binary's load address alone (Go's pprof) then
                // agree with those that use the file offset.
                Some(k) => d.mapped[k],
                None => (ranges[m].0, ranges[m].1, ranges[m].0),
            };
            let build_id: String = d.build_id.iter().flatten().map(|b| format!("{b:02x}")).collect();
            self.out.mapping.push(proto::Mapping {
                id: m as u64 + 1,
                memory_start: start,
                memory_limit: limit,
                file_offset: offset,
                filename: self.st.id(d.display_name()),
                build_id: self.st.id(&build_id),
                has_functions: named[m],
                has_filenames: files[m],
                has_line_numbers: lines[m],
                has_inline_frames: inlines[m],
            });
        }
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
pub fn write(out: &mut dyn Write, p: &Profile) -> io::Result<()> {
    let bytes = build(p).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
