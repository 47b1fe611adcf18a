//! simpleperf's report-sample protobuf (`cmd_report_sample.proto`), the format Android Studio
//! imports: the magic `SIMPLEPERF`, a 16-bit version (1), then records, each a 32-bit
//! little-endian length and a `Record` message, and a zero length at the end.
//!
//! Records: the meta info (event names), every sample in time order with its whole call chain
//! (leaf first; each frame a file, a symbol of that file and its `vaddr_in_file`), the lost
//! counts, then each file with the symbols samples hit, and each thread. Files and symbols are
//! numbered in the order samples first reach them, as simpleperf numbers them. Off-CPU
//! recordings give their samples time weights (nanoseconds), as every other output does.

use std::collections::HashMap;
use std::io::{self, Write};

use prost::Message;

use crate::model::{DsoId, ExecType};
use crate::profile::{Profile, Thread};
use crate::resolve::FuncId;

/// The messages of cmd_report_sample.proto (field numbers as in the schema).
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, optional, tag = "1")]
        pub time: Option<u64>,
        #[prost(int32, optional, tag = "2")]
        pub thread_id: Option<i32>,
        #[prost(message, repeated, tag = "3")]
        pub callchain: Vec<CallChainEntry>,
        #[prost(uint64, optional, tag = "4")]
        pub event_count: Option<u64>,
        #[prost(uint32, optional, tag = "5")]
        pub event_type_id: Option<u32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CallChainEntry {
        #[prost(uint64, optional, tag = "1")]
        pub vaddr_in_file: Option<u64>,
        #[prost(uint32, optional, tag = "2")]
        pub file_id: Option<u32>,
        #[prost(int32, optional, tag = "3")]
        pub symbol_id: Option<i32>,
        #[prost(int32, optional, tag = "4")]
        pub execution_type: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct LostSituation {
        #[prost(uint64, optional, tag = "1")]
        pub sample_count: Option<u64>,
        #[prost(uint64, optional, tag = "2")]
        pub lost_count: Option<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct File {
        #[prost(uint32, optional, tag = "1")]
        pub id: Option<u32>,
        #[prost(string, optional, tag = "2")]
        pub path: Option<String>,
        #[prost(string, repeated, tag = "3")]
        pub symbol: Vec<String>,
        #[prost(string, repeated, tag = "4")]
        pub mangled_symbol: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Thread {
        #[prost(uint32, optional, tag = "1")]
        pub thread_id: Option<u32>,
        #[prost(uint32, optional, tag = "2")]
        pub process_id: Option<u32>,
        #[prost(string, optional, tag = "3")]
        pub thread_name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetaInfo {
        #[prost(string, repeated, tag = "1")]
        pub event_type: Vec<String>,
        #[prost(bool, optional, tag = "6")]
        pub trace_offcpu: Option<bool>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum RecordData {
        #[prost(message, tag = "1")]
        Sample(Sample),
        #[prost(message, tag = "2")]
        Lost(LostSituation),
        #[prost(message, tag = "3")]
        File(File),
        #[prost(message, tag = "4")]
        Thread(Thread),
        #[prost(message, tag = "5")]
        MetaInfo(MetaInfo),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Record {
        #[prost(oneof = "RecordData", tags = "1, 2, 3, 4, 5")]
        pub record_data: Option<RecordData>,
    }
}

/// Files and their symbols, numbered as samples first reach them.
#[derive(Default)]
struct Files {
    ids: HashMap<DsoId, u32>,
    files: Vec<(DsoId, Vec<FuncId>, HashMap<FuncId, i32>)>,
}

impl Files {
    /// The file id and symbol id of function `f`; code without a symbol has none (-1), as
    /// simpleperf writes it.
    fn ids(&mut self, p: &Profile, f: FuncId) -> (u32, i32) {
        let dso = p.names.func(f).dso;
        let next = self.files.len() as u32;
        let file = *self.ids.entry(dso).or_insert(next);
        if file == next {
            self.files.push((dso, Vec::new(), HashMap::new()));
        }
        let (_, symbols, index) = &mut self.files[file as usize];
        if p.symbols.is_unnamed(f) {
            return (file, -1);
        }
        let symbol = *index.entry(f).or_insert_with(|| {
            symbols.push(f);
            symbols.len() as i32 - 1
        });
        (file, symbol)
    }
}

/// Writes every sample of the sections shown.
pub fn write(out: &mut dyn Write, p: &Profile) -> io::Result<()> {
    let mut w = io::BufWriter::new(out);
    w.write_all(b"SIMPLEPERF")?;
    w.write_all(&1u16.to_le_bytes())?;
    let record = |w: &mut io::BufWriter<&mut dyn Write>, data: proto::RecordData| {
        let bytes = proto::Record { record_data: Some(data) }.encode_to_vec();
        w.write_all(&(bytes.len() as u32).to_le_bytes())?;
        w.write_all(&bytes)
    };
    let sections: Vec<_> = p.shown_sections().collect();
    let meta = proto::MetaInfo {
        event_type: sections.iter().map(|s| s.name.clone()).collect(),
        trace_offcpu: Some(sections.iter().any(|s| s.time_in_ns())),
    };
    record(&mut w, proto::RecordData::MetaInfo(meta))?;
    let mut rows: Vec<(u32, &crate::profile::Row)> =
        sections.iter().zip(0..).flat_map(|(s, i)| s.rows.iter().map(move |r| (i, r))).collect();
    rows.sort_by_key(|(_, r)| r.time);
    let mut files = Files::default();
    let mut threads: Vec<Thread> = Vec::new();
    let mut seen_threads = std::collections::HashSet::new();
    for &(event, r) in &rows {
        if seen_threads.insert(r.thread) {
            threads.push(r.thread);
        }
        let sample = sample(p, r, event, &mut files);
        record(&mut w, proto::RecordData::Sample(sample))?;
    }
    let lost = proto::LostSituation {
        sample_count: Some(rows.len() as u64),
        lost_count: Some(sections.iter().fold(0u64, |a, s| a.saturating_add(s.lost))),
    };
    record(&mut w, proto::RecordData::Lost(lost))?;
    for (id, (dso, symbols, _)) in files.files.iter().enumerate() {
        let names = &p.names;
        let file = proto::File {
            id: Some(id as u32),
            path: Some(names.dsos[*dso as usize].display_name().to_string()),
            symbol: symbols.iter().map(|&f| names.func(f).name.clone()).collect(),
            mangled_symbol: symbols
                .iter()
                .map(|&f| names.func(f).system.clone().unwrap_or_else(|| names.func(f).name.clone()))
                .collect(),
        };
        record(&mut w, proto::RecordData::File(file))?;
    }
    for t in threads {
        let thread = proto::Thread {
            thread_id: Some(t.tid as u32),
            process_id: Some(t.pid as u32),
            thread_name: Some(p.names.comm(t.comm).to_string()),
        };
        record(&mut w, proto::RecordData::Thread(thread))?;
    }
    w.write_all(&0u32.to_le_bytes())?;
    w.flush()
}

/// A sample with its call chain, leaf first: one entry per address, named by its containing
/// function; a Java method compiled at run time as its dex method.
fn sample(p: &Profile, r: &crate::profile::Row, event: u32, files: &mut Files) -> proto::Sample {
    let stack = r.stack as usize;
    let callchain = p.stacks[stack]
        .iter()
        .zip(&p.stack_exec[stack])
        .map(|(&a, &exec)| {
            let (f, vaddr) = match p.java_dex.get(&a) {
                Some(&(_, f, start)) => (f, start),
                None => (
                    *p.symbols.funcs(a).last().expect("every address has a function"),
                    p.symbols.vaddr_in_file(a),
                ),
            };
            let (file, symbol) = files.ids(p, f);
            proto::CallChainEntry {
                vaddr_in_file: Some(vaddr),
                file_id: Some(file),
                symbol_id: Some(symbol),
                execution_type: (exec != ExecType::Native).then(|| execution_type(exec)),
            }
        })
        .collect();
    proto::Sample {
        time: Some(r.time),
        thread_id: Some(r.thread.tid),
        callchain,
        event_count: Some(r.weight),
        event_type_id: Some(event),
    }
}

/// The proto's `ExecutionType`.
fn execution_type(e: ExecType) -> i32 {
    match e {
        ExecType::Native => 0,
        ExecType::Interpreted => 1,
        ExecType::Jit => 2,
        ExecType::Art => 3,
    }
}
