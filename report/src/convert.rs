//! The converter: the records of a recording, in time order, turned into the process model
//! and into samples with address stacks for the profile. One handler per record kind.

use std::sync::Arc;

use linux_perf_data::linux_perf_event_reader::{
    CommOrExecRecord, ContextSwitchRecord, CpuMode, EventRecord, ForkOrExitRecord, LostRecord, Mmap2FileId,
    Mmap2Record, MmapRecord, RawData, RawEventRecord, RecordType,
};
use linux_perf_data::PerfFileRecord;
use rperf_symbols::BinaryFinder;
use rperf_unwind::{Arch, ChainFrame, CodeAddress, Context, ProcessUnwinder};

use crate::builder::ProfileBuilder;
use crate::configs::{LoadConfig, ProfileConfig};
use crate::decoded::Decoded;
use crate::load::Recording;
use crate::model::Model;
use crate::profile::{Info, Place, Profile, Sample, Thread};
use crate::resolve::{AddrId, JitSources, ResolveConfig, Resolver};
use crate::Error;

/// What reading records counted: records, those that could not be decoded, and the buffer
/// records are patched in.
#[derive(Default)]
pub(crate) struct Tally {
    pub records: u64,
    pub undecodable: u64,
    patched: Vec<u8>,
}

/// Turns records into the model and the profile.
pub struct Converter {
    model: Model,
    resolver: Resolver,
    profile: ProfileBuilder,
    build_ids: std::collections::HashMap<String, Vec<u8>>,
    arch: Arch,
    /// Frame addresses of the sample at hand, reused from sample to sample.
    frames: Vec<AddrId>,
    /// The call chain of the sample at hand, reused likewise (on one thread).
    chain: Vec<ChainFrame>,
    /// Each sample keeps its frames' places (run-time addresses and mappings) and tracepoint
    /// data; those of the sample at hand.
    keep_places: bool,
    places: Vec<Place>,
    /// Counter groups: each thread's last value of each counter, and what the sample at hand
    /// counted of each since the thread's previous sample (its first counts from 0).
    last_group: std::collections::HashMap<(i32, usize), u64>,
    counted: Vec<(usize, u64)>,
    /// `-b`: samples are the taken branches of the recorded samples' branch stacks.
    branches: bool,
    /// The event of each sample id, where the reader cannot tell (`Recording::event_of_id`).
    event_of_id: Option<std::collections::HashMap<u64, usize>>,
    /// Frames kept per sample.
    max_stack: usize,
    /// The outputs show callers: every sample keeps its whole stack.
    callers: bool,
}

/// Reads every record of `rec` and returns the profile, keeping what `opts.needs` says (and
/// the logged samples, with `Needs::places`).
pub fn convert_with(
    mut rec: Recording,
    opts: &LoadConfig,
    profile: &ProfileConfig,
) -> Result<(Profile, Option<crate::sample_log::SampleReader>), Error> {
    let path = &opts.input;
    let mut c = Converter::new(&mut rec, opts, profile)?;
    let info = info(&rec, path);
    let mut warnings = std::mem::take(&mut rec.warnings);
    let mut progress = crate::progress::Progress::new(rec.len, rec.reading.position.clone());
    c.read_records(rec.records, path, &mut progress, &mut warnings)?;
    warnings.extend(rec.reading.take_repairs().into_iter().map(crate::Warning::from));
    progress.stage("symbolizing");
    // What unwinding held (unwind tables and caches) is given back before symbolizing loads
    // debug info.
    let Converter { model, mut resolver, profile, .. } = c;
    resolver.finish_unwinding();
    let (profile, samples) =
        profile.finish(model, |model| resolver.finish_symbols(model, &mut warnings), info, Vec::new());
    progress.finish();
    warnings.extend(profile.unnamed_warning());
    warnings.extend(profile.broken_chains_warning());
    warnings.extend(rperf_symbols::cache::take_warning().map(crate::Warning::Symbols));
    warnings.extend(rperf_symbols::notes::take().into_iter().map(crate::Warning::Symbols));
    let mut profile = profile;
    warnings.append(&mut profile.warnings);
    Ok((Profile { warnings, ..profile }, samples))
}

impl Converter {
    /// A converter for `rec`: its binaries found as `opts` says, its kernel's symbols, the JIT
    /// sources and symbols it stores; its samples go into a profile made as `profile` says.
    pub(crate) fn new(
        rec: &mut Recording,
        opts: &LoadConfig,
        profile: &ProfileConfig,
    ) -> Result<Converter, Error> {
        let needs = opts.needs;
        let profile = ProfileBuilder::new(&rec.events, rec.off_cpu, profile, needs)?;
        let this_kernel = crate::load::recorded_on_this_kernel(&rec.perf_file) || rec.cut_short_here;
        let mut finder = BinaryFinder::new(&opts.symfs);
        finder.add_symdirs(&opts.symdirs);
        finder.set_same_kernel(this_kernel);
        let folders = !opts.symfs.is_empty() || !opts.symdirs.is_empty();
        let vmlinux = crate::resolve::vmlinux(&finder, folders, &rec.build_ids);
        let kallsyms = (opts.kallsyms.as_deref(), vmlinux.as_deref());
        let kernel =
            crate::resolve::kernel_source(kallsyms, &rec.perf_file, &rec.stored_symbols, this_kernel)?;
        let section = |id| rec.perf_file.feature_section_data(linux_perf_data::Feature(id));
        let mut profile = profile;
        if let Some(d) = section(linux_perf_data::Feature::TRACING_DATA.0) {
            profile.tracing_data(d);
        }
        if let Some(image) = section(rperf_perfdata::feature::RPERF_VDSO) {
            finder.set_recorded_vdso(image.to_vec());
        }
        let dex = linux_perf_data::simpleperf_dso_type::DSO_DEX_FILE;
        let mut model = Model::default();
        model.dex_paths =
            rec.stored_symbols.iter().filter(|r| r.r#type == dex).map(|r| r.path.clone()).collect();
        profile.threads.name(|name| model.intern(name));
        let config = ResolveConfig {
            names: opts.names,
            dwarf_inline: opts.inline,
            trust_any_owner: opts.force,
            show_ip: opts.show_ip,
            want_srclines: opts.srclines,
            want_lines: needs.lines,
        };
        let mut jit = JitSources::default();
        if let Some(d) = section(rperf_perfdata::feature::RPERF_JIT_SYMFILES) {
            jit.symfiles = crate::jit::Symfiles::new(rperf_perfdata::sections::decode_jit_symfiles(d));
        }
        if let Some(d) = section(rperf_perfdata::feature::RPERF_PERF_MAPS) {
            jit.embedded_perf_maps = rperf_perfdata::sections::decode_perf_maps(d);
        }
        if let Some(d) = section(rperf_perfdata::feature::RPERF_JITDUMPS) {
            jit.embedded_jitdumps = rperf_perfdata::sections::decode_jitdumps(d);
        }
        if let Some(config) = opts.debuginfod.config() {
            finder.use_debuginfod(rperf_symbols::debuginfod::Client::new(config));
            // Unwinding user stacks reads the binaries as the samples come; naming fetches
            // what else it needs.
            let stacks = linux_perf_data::linux_perf_event_reader::SampleFormat::STACK_USER;
            if rec.perf_file.event_attributes().iter().any(|a| a.attr.sample_format.contains(stacks)) {
                crate::resolve::fetch_missing_binaries(&mut finder, &model, &rec.build_ids);
            }
        }
        let stored = std::mem::take(&mut rec.stored_symbols);
        Ok(Converter {
            model,
            resolver: Resolver::new(config, finder, kernel, stored, jit, rec.arch),
            profile,
            build_ids: std::mem::take(&mut rec.build_ids),
            arch: rec.arch,
            frames: Vec::new(),
            chain: Vec::new(),
            keep_places: needs.places,
            branches: opts.branches,
            places: Vec::new(),
            last_group: Default::default(),
            counted: Vec::new(),
            event_of_id: rec.event_of_id.take(),
            max_stack: opts.max_stack,
            callers: needs.callers || needs.places,
        })
    }

    /// Reads the records in time order, handing each kind to its handler.
    fn read_records(
        &mut self,
        reader: crate::records::RecordReader,
        path: &std::path::Path,
        progress: &mut crate::progress::Progress,
        warnings: &mut Vec<crate::Warning>,
    ) -> Result<(), Error> {
        let mut tally = Tally::default();
        let batches = crate::records::read(reader);
        let mut ended = false;
        while let Some(batch) = batches.next() {
            ended |= batch.end.is_some();
            progress.tick();
            self.take(&batch, &mut tally);
            if let Some(Err(e)) = &batch.end {
                let reason = e.clone();
                if tally.records == 0 {
                    return Err(Error::Format { path: path.to_path_buf(), reason: reason.into() });
                }
                warnings.push(crate::Warning::StoppedAt {
                    path: path.to_path_buf(),
                    records: tally.records,
                    reason,
                });
            }
        }
        if !ended {
            warnings.push(crate::Warning::EndedEarly { path: path.to_path_buf(), records: tally.records });
        }
        if tally.undecodable > 0 {
            warnings.push(crate::Warning::Undecodable { count: tally.undecodable });
        }
        Ok(())
    }

    /// Converts a batch of records; samples between records that change the process model
    /// are taken together.
    pub(crate) fn take(&mut self, batch: &crate::records::Batch, tally: &mut Tally) {
        // Read beside the converter's other state, which samples change.
        let event_of_id = self.event_of_id.take();
        let mut samples: Vec<(usize, RawEventRecord<'_>)> = Vec::new();
        for record in batch.records() {
            tally.records += 1;
            let (attr, raw) = match record {
                PerfFileRecord::EventRecord { attr_index, record } => (attr_index, record),
                PerfFileRecord::UserRecord(r) => {
                    if let Some(d) = crate::decode::tracing_data_record(&r) {
                        self.profile.tracing_data(&d);
                    }
                    continue;
                }
            };
            if raw.record_type == RecordType::SAMPLE {
                samples.push((attr, raw));
                continue;
            }
            tally.undecodable += self.add_samples(&samples, &event_of_id);
            samples.clear();
            tally.undecodable += u64::from(!self.handle_record(attr, &raw, &mut tally.patched));
        }
        tally.undecodable += self.add_samples(&samples, &event_of_id);
        self.event_of_id = event_of_id;
        self.resolver.load_ahead(&self.model);
    }

    /// Names may be asked for before every record is in (a live report).
    pub(crate) fn follow(&mut self) {
        self.resolver.follow();
    }

    /// The profile of the records taken so far, symbolized; the converter goes on taking
    /// records (a live report).
    pub(crate) fn snapshot(&mut self, info: Info) -> Profile {
        let resolver = &mut self.resolver;
        let symbolize = |model: &mut Model| resolver.symbols_so_far(model);
        self.profile.clone().finish(self.model.clone(), symbolize, info, Vec::new()).0
    }

    /// Hands a record other than a sample to its handler; false when it could not be decoded.
    fn handle_record(&mut self, attr: usize, raw: &RawEventRecord<'_>, patched: &mut Vec<u8>) -> bool {
        match crate::decode::parse(raw, patched) {
            Some(EventRecord::Comm(r)) => self.handle_comm(&r),
            Some(EventRecord::Fork(r)) => self.handle_fork(&r),
            Some(EventRecord::Exit(r)) => self.profile.switched_in(&self.model, r.tid, r.timestamp),
            Some(EventRecord::ContextSwitch(ContextSwitchRecord::In { .. })) => {
                if let (Ok(c), Some(time)) = (raw.common_data(), raw.timestamp()) {
                    self.profile.switched_in(&self.model, c.tid.unwrap_or(-1), time);
                }
            }
            Some(EventRecord::Mmap(r)) => self.handle_mmap(&r),
            Some(EventRecord::Mmap2(r)) => self.handle_mmap2(&r),
            Some(EventRecord::Lost(r)) => self.handle_lost(attr, &r),
            Some(_) => {}
            None => return false,
        }
        true
    }
}

impl Converter {
    fn handle_comm(&mut self, r: &CommOrExecRecord<'_>) {
        let name = String::from_utf8_lossy(&r.name.as_slice()).into_owned();
        self.model.comm(r.pid, r.tid, &name, r.is_execve);
    }

    fn handle_fork(&mut self, r: &ForkOrExitRecord) {
        self.model.fork(r.pid, r.ppid, r.tid, r.ptid);
    }

    fn handle_mmap(&mut self, m: &MmapRecord<'_>) {
        let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
        let kernel = matches!(m.cpu_mode, CpuMode::Kernel) || m.pid == -1;
        let (path, pgoff) = self.library_in_apk(path, m.page_offset, m.is_executable && !kernel);
        let build_id = self.build_ids.get(&path).cloned();
        self.model.mmap(m.pid, (m.address, m.length, pgoff), &path, build_id, m.is_executable, kernel);
    }

    fn handle_mmap2(&mut self, m: &Mmap2Record<'_>) {
        let path = String::from_utf8_lossy(&m.path.as_slice()).into_owned();
        let kernel = matches!(m.cpu_mode, CpuMode::Kernel) || m.pid == -1;
        let exec = m.protection & libc::PROT_EXEC as u32 != 0;
        let (path, pgoff) = self.library_in_apk(path, m.page_offset, exec && !kernel);
        let build_id = match &m.file_id {
            Mmap2FileId::BuildId(b) => Some(b.clone()),
            _ => self.build_ids.get(&path).cloned(),
        };
        self.model.mmap(m.pid, (m.address, m.length, pgoff), &path, build_id, exec, kernel);
    }

    /// Code mapped straight from an APK is the library stored there: named and offset as
    /// simpleperf records it (`X.apk!/lib/abi/libfoo.so`), so that it is found and unwound
    /// like any library.
    fn library_in_apk(&mut self, path: String, pgoff: u64, code: bool) -> (String, u64) {
        match code.then(|| self.resolver.apk_library(&path, pgoff)).flatten() {
            Some(library) => library,
            None => (path, pgoff),
        }
    }

    fn handle_lost(&mut self, attr: usize, r: &LostRecord) {
        self.profile.lost(attr, r.count);
    }

    /// Adds samples to the profile, in order. No record between them changes the processes
    /// they belong to, so decoding them and unwinding their user stacks can run side by side,
    /// and do where more than two cores are free. Returns how many could not be decoded.
    fn add_samples<'a>(
        &mut self,
        raw: &[(usize, RawEventRecord<'a>)],
        event_of_id: &Option<std::collections::HashMap<u64, usize>>,
    ) -> u64 {
        use rayon::prelude::*;
        let arch = self.arch;
        // Below this many samples, spreading the work costs more than it saves; so it does
        // with two cores or fewer, which the record reader and this thread keep busy already.
        // On one thread, each sample is decoded, unwound and added in turn, in one reused
        // chain: no memory that grows with the samples between two records.
        if raw.len() < 16 || rayon::current_num_threads() <= 2 {
            let mut undecodable = 0;
            for (i, (attr, r)) in raw.iter().enumerate() {
                if let Some((_, ahead)) = raw.get(i + PREFETCH_AHEAD) {
                    prefetch(&ahead.data);
                }
                let chain = std::mem::take(&mut self.chain);
                let Some(mut d) = Decoded::new(*attr, r, arch, event_of_id, chain, self.branches) else {
                    undecodable += 1;
                    continue;
                };
                if !self.keeps_callers(d.pid) {
                    d.leaf_only();
                } else if d.user.is_some() {
                    let unwinder = self.resolver.unwinder(&mut self.model, d.pid, d.time);
                    d.unwind(unwinder.as_deref());
                }
                self.chain = self.add_sample(d);
            }
            return undecodable;
        }
        let branches = self.branches;
        let decode = |r: &(usize, RawEventRecord<'a>)| {
            Decoded::new(r.0, &r.1, arch, event_of_id, Vec::new(), branches)
        };
        let mut decoded: Vec<Option<Decoded<'a>>> = raw.par_iter().map(decode).collect();
        let unwinders: Vec<Option<Arc<ProcessUnwinder>>> = decoded
            .iter_mut()
            .map(|d| match d {
                Some(d) if !self.keeps_callers(d.pid) => {
                    d.leaf_only();
                    None
                }
                Some(d) if d.user.is_some() => self.resolver.unwinder(&mut self.model, d.pid, d.time),
                _ => None,
            })
            .collect();
        decoded.par_iter_mut().zip(unwinders.par_iter()).for_each(|(d, u)| {
            if let Some(d) = d {
                d.unwind(u.as_deref());
            }
        });
        let mut undecodable = 0;
        for d in decoded {
            match d {
                Some(d) => {
                    self.add_sample(d);
                }
                None => undecodable += 1,
            }
        }
        undecodable
    }

    /// Whether the samples of process `pid` keep their callers: when the outputs show them,
    /// and in a process that runs Java, whose sampled frame shaping may hide.
    fn keeps_callers(&self, pid: i32) -> bool {
        self.callers || self.model.processes.get(&pid).is_some_and(|s| s.runs_java)
    }

    /// Adds a decoded sample; gives back its chain, for the next.
    fn add_sample(&mut self, d: Decoded<'_>) -> Vec<ChainFrame> {
        if self.branches {
            self.add_branches(&d);
            return d.chain;
        }
        let (pid, tid, time) = (d.pid, d.tid, d.time);
        let chain = &d.chain[..d.chain.len().min(self.max_stack)];
        self.resolver.frames(&mut self.model, pid, chain, time, &mut self.frames);
        // A caller in no mapping is a wrong return address (a frame-pointer chain's garbage
        // end, or a broken chain): the stack ends before it, as simpleperf ends it.
        let wrong = self.frames.iter().skip(1).position(|&a| self.resolver.is_unmapped(a));
        if let Some(at) = wrong {
            self.frames.truncate(at + 1);
        }
        self.places.clear();
        if self.keep_places {
            let model = &self.model;
            self.places.extend(chain.iter().map(|f| place(model, pid, f)));
        }
        self.counted.clear();
        for g in &d.group {
            let (event, value) = (g.event as usize, g.value);
            let last = self.last_group.insert((tid, event), value).unwrap_or(0);
            self.counted.push((event, value.saturating_sub(last)));
        }
        let comm = self.model.comm_of(pid, tid);
        let sample = Sample {
            attr: d.attr,
            time,
            thread: Thread { comm, pid, tid },
            cpu: d.cpu,
            period: d.period,
            addrs: &self.frames,
            truncated: d.truncated,
            broken_chain: wrong.is_some(),
            places: &self.places,
            raw: if self.keep_places { d.raw.as_deref() } else { None },
            counted: &self.counted,
            group: if self.keep_places { &d.group } else { &[] },
        };
        self.profile.add_sample(&self.model, &sample);
        d.chain
    }
}

impl Converter {
    /// With `-b`: each taken branch of a sample is a sample of its own, with the sample's
    /// period, whose stack is the branch's target and then its source (instruction addresses,
    /// not return addresses), as simpleperf reports branches. A sample without a branch stack
    /// adds nothing.
    fn add_branches(&mut self, d: &Decoded<'_>) {
        let frame = |a: u64| ChainFrame { addr: CodeAddress::InstructionPointer(a), context: Context::Other };
        let comm = self.model.comm_of(d.pid, d.tid);
        for &(from, to) in &d.branches {
            self.resolver.frames(&mut self.model, d.pid, &[frame(to), frame(from)], d.time, &mut self.frames);
            let sample = Sample {
                attr: d.attr,
                time: d.time,
                thread: Thread { comm, pid: d.pid, tid: d.tid },
                cpu: d.cpu,
                period: d.period,
                addrs: &self.frames,
                truncated: false,
                broken_chain: false,
                places: &[],
                raw: None,
                counted: &[],
                group: &[],
            };
            self.profile.add_sample(&self.model, &sample);
        }
    }
}

/// Where a frame ran: its address as recorded and the mapping that held it.
fn place(model: &Model, pid: i32, f: &ChainFrame) -> Place {
    let ip = f.addr.addr();
    let space = match f.context {
        Context::Kernel => Some(&model.kernel),
        _ => model.processes.get(&pid),
    };
    let map = space.and_then(|s| s.find(f.addr.lookup())).map_or((0, 0, 0), |m| (m.start, m.end, m.pgoff));
    Place { ip, map }
}

/// How many samples ahead of the one at hand the converter asks for a sample's memory.
const PREFETCH_AHEAD: usize = 2;

/// Asks the CPU to load the parts of a sample record that decoding and unwinding read (its
/// fields, registers and the top of its copied stack, and the stack's dynamic size at its end)
/// while earlier samples are converted: the record reader's thread may run on a core whose
/// caches this thread does not share, and waiting for memory was a tenth of its time.
fn prefetch(data: &RawData<'_>) {
    let RawData::Single(bytes) = data else { return };
    rperf_perfdata::mapped::prefetch(bytes, 1024);
}

/// What outputs print of the recording `rec` of `input`.
pub(crate) fn info(rec: &Recording, input: &std::path::Path) -> Info {
    Info {
        input: input.to_path_buf(),
        cmdline: rec.cmdline.clone(),
        arch: rec.arch_name.as_deref().map(arch_label),
        written: rec.written,
        time_range: (0, 0),
        recorded: rec.recorded,
    }
}

/// An architecture as reports name it (simpleperf's names: `arm64`, `arm`, `x86`).
fn arch_label(recorded: &str) -> String {
    match recorded {
        "aarch64" | "arm64" => "arm64",
        a if a.starts_with("arm") => "arm",
        "i386" | "i486" | "i586" | "i686" | "x86" => "x86",
        a => a,
    }
    .to_string()
}
