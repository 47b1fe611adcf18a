//! What the recorder does with each record drained from a ring buffer: counts samples and
//! losses, trims or unwinds DWARF stack copies, notes the binaries, processes and kernel
//! addresses the features at the end describe, and hands the record to the writer.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rperf_perfdata::bytes::{u32_at, u64_at};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::attr::regs_count;
use crate::jit_debug::JitDebugReader;
use crate::options::{CallGraph, RecordOptions};
use crate::post_unwind::PostUnwinder;
use crate::procfs;
use crate::sample as sample_fields;
use crate::short_lived::ShortLived;
use crate::sys::{self, misc, record_type, sample};
use crate::writer::PerfDataWriter;
use crate::Error;

/// Under pressure (a ring buffer at least half full when drained), DWARF stack copies are cut
/// to this many bytes: the innermost frames still unwind, and the writer keeps up.
const CUT_STACK_BYTES: u64 = 1024;

/// Consumes records coming out of the ring buffers.
pub(crate) struct Sink {
    pub(crate) writer: PerfDataWriter,
    pub(crate) sample_types: sample_fields::SampleTypes,
    pub(crate) regs_count: usize,
    pub(crate) samples: u64,
    pub(crate) lost: u64,
    pub(crate) lost_sideband: u64,
    pub(crate) cut_stacks: u64,
    /// Set while draining a ring buffer that was at least half full.
    pub(crate) pressure: bool,
    pub(crate) kernel_hits: BTreeSet<u64>,
    /// Processes with samples, whose JIT symbol maps are kept at the end, with their owners
    /// (who may own their JIT maps), looked up at their first sample: where processes come
    /// and go fast, most get none, and a /proc lookup for each (at its COMM record) had been
    /// most of a system-wide recording's cost.
    pub(crate) pids: BTreeMap<u32, Option<u32>>,
    /// jitdump files the recorded processes mapped, with the mapping process's owner.
    pub(crate) jitdumps: BTreeMap<String, Option<u32>>,
    /// Every executable file mapped, by its name's bytes in the records.
    pub(crate) dsos: FxHashMap<Box<[u8]>, Dso>,
    /// Samples carry stack copies (DWARF call graphs), cut or unwound here: their records are
    /// rewritten, at a cost per sample.
    pub(crate) trim: bool,
    pub(crate) stacks: StackEnds,
    pub(crate) error: Option<Error>,
    /// Samples of this pid (rperf's own, with --exclude-perf) are left out.
    pub(crate) exclude_pid: Option<u32>,
    /// The GDB JIT interface of the recorded processes.
    pub(crate) jit: JitDebugReader,
    /// Unwinds DWARF samples as they come (`--post-unwind`).
    pub(crate) post: Option<PostUnwinder>,
    /// Threads created by threads with events, which inherited them (from the kernel's FORK
    /// records), kept while threads listed from /proc wait to be followed (see
    /// `Session::follow_threads`): None while none wait.
    pub(crate) forked_tids: Option<FxHashSet<u32>>,
    /// Set while handling records made from /proc, which are no sign of inherited events.
    pub(crate) synthesizing: bool,
    /// Processes whose EXIT record came in this pass over the rings: their samples, drained
    /// after the side-band, need no /proc lookup that would find nothing.
    pub(crate) exited: FxHashSet<u32>,
    /// Processes that begin and end within a pass without a sample, whose task records are
    /// left out; None with `--all-task-events`.
    pub(crate) short_lived: Option<ShortLived>,
}

/// An executable file mapped by a recorded process.
pub(crate) struct Dso {
    /// The build id an MMAP2 record gave.
    pub(crate) build_id: Option<Vec<u8>>,
    /// Whether the JIT reader looks at its mappings (it may export the GDB JIT interface).
    jit: bool,
}

/// Where each process's stacks end, so that stack copies can stop there. Read from
/// /proc/PID/maps when a stack pointer falls outside what is known, at most every 20 ms per
/// process.
#[derive(Default)]
pub(crate) struct StackEnds {
    maps: FxHashMap<u32, (Instant, Vec<(u64, u64)>)>,
}

impl StackEnds {
    fn end_of(&mut self, pid: u32, sp: u64) -> Option<u64> {
        let find = |v: &Vec<(u64, u64)>| {
            let i = v.partition_point(|(start, _)| *start <= sp);
            (i > 0 && sp < v[i - 1].1).then(|| v[i - 1].1)
        };
        if let Some((_, v)) = self.maps.get(&pid) {
            if let Some(end) = find(v) {
                return Some(end);
            }
        }
        let stale = self.maps.get(&pid).is_none_or(|(t, _)| t.elapsed() >= Duration::from_millis(20));
        if !stale {
            return None;
        }
        let ranges: Vec<(u64, u64)> = procfs::maps_of(pid as i32).iter().map(|m| (m.start, m.end)).collect();
        let end = find(&ranges);
        self.maps.insert(pid, (Instant::now(), ranges));
        end
    }

    fn forget(&mut self, pid: u32) {
        self.maps.remove(&pid);
    }
}

impl Sink {
    /// A sink writing the recording `opts` asks for: to `--out-fd` when given, else a new
    /// file at the output path.
    pub(crate) fn new(opts: &RecordOptions) -> Result<Sink, Error> {
        let writer = match opts.out_fd {
            Some(fd) => {
                use std::os::fd::FromRawFd;
                // SAFETY: the fd was handed to this process for the recording (`--out-fd`);
                // nothing else in it uses that number.
                let file = unsafe { std::fs::File::from_raw_fd(fd) };
                PerfDataWriter::create_in(file, &opts.output, &[])?
            }
            None => PerfDataWriter::create(&opts.output, &[])?,
        };
        let dwarf = matches!(opts.call_graph, CallGraph::Dwarf { .. });
        let mut sink = Sink {
            writer,
            sample_types: Default::default(),
            regs_count: regs_count(),
            samples: 0,
            lost: 0,
            lost_sideband: 0,
            cut_stacks: 0,
            pressure: false,
            kernel_hits: BTreeSet::new(),
            pids: BTreeMap::new(),
            jitdumps: BTreeMap::new(),
            jit: JitDebugReader::new(opts.jit_interface, opts.jit_limits),
            post: (opts.post_unwind && dwarf).then(PostUnwinder::new),
            dsos: FxHashMap::default(),
            trim: dwarf,
            stacks: StackEnds::default(),
            error: None,
            exclude_pid: opts.exclude_perf.then(std::process::id),
            forked_tids: None,
            exited: Default::default(),
            synthesizing: false,
            short_lived: (!opts.all_task_events).then(ShortLived::default),
        };
        if sink.post.is_some() {
            // The unwinder is handed each new symbol file (its CFI unwinds JIT code).
            sink.jit.store.keep_fresh();
        }
        Ok(sink)
    }

    /// Handles a record from a side-band ring buffer (see `handle_placed`).
    pub(crate) fn handle_sideband(&mut self, rec: &[u8], place: Option<(u32, usize)>) {
        if u32_at(rec, 0) == Some(record_type::LOST) {
            self.lost_sideband += u64_at(rec, 16).unwrap_or(0);
        }
        self.handle_placed(rec, place);
    }

    /// Handles a record the writer copies.
    pub(crate) fn handle(&mut self, rec: &[u8]) {
        self.handle_placed(rec, None);
    }

    /// Handles a record that lies at `place` (a ring buffer's number, an offset in its data)
    /// until the round is written, where the writer leaves it if it is written as it is; None
    /// for a record the writer copies.
    pub(crate) fn handle_placed(&mut self, rec: &[u8], place: Option<(u32, usize)>) {
        if self.error.is_some() {
            return;
        }
        let type_ = u32_at(rec, 0).expect("an 8-byte header");
        let misc_bits = u16::from_le_bytes([rec[4], rec[5]]);
        let mut trimmed = None;
        match type_ {
            record_type::SAMPLE => match self.handle_sample(rec, misc_bits) {
                Some(rewritten) => trimmed = rewritten,
                None => return,
            },
            record_type::LOST => self.lost += u64_at(rec, 16).unwrap_or(0),
            record_type::LOST_SAMPLES => self.lost += u64_at(rec, 8).unwrap_or(0),
            record_type::MMAP2 | record_type::MMAP => self.note_mmap(type_, misc_bits, rec),
            record_type::FORK | record_type::COMM | record_type::EXIT => {
                self.note_task(type_, misc_bits, rec)
            }
            _ => {}
        }
        let out = trimmed.as_deref().unwrap_or(rec);
        let time = sample_fields::time_of(out, |id| self.sample_types.get(id));
        match place.filter(|_| trimmed.is_none()) {
            Some((ring, at)) => self.writer.place_record(ring, at, rec, time),
            None => {
                if let Err(e) = self.writer.write_record_at(out, time) {
                    self.error = Some(e);
                }
            }
        }
    }

    /// Counts a sample and unwinds or trims its stack copy: the record to write instead of it
    /// (`Some(None)`: as it is), or None to leave it out (rperf's own with --exclude-perf, or
    /// one that cannot be unwound).
    fn handle_sample(&mut self, rec: &[u8], misc_bits: u16) -> Option<Option<Vec<u8>>> {
        let id = u64_at(rec, 8).unwrap_or(0);
        let st = self.sample_types.get(id).unwrap_or(0);
        let parsed = sample_fields::parse(rec, st, self.regs_count);
        let unwinding = st & sample::STACK_USER != 0 && self.post.is_some();
        let Some(v) = parsed else {
            // Its attribute says "no stack": a sample that can't be unwound is left out.
            return (!unwinding).then_some(None);
        };
        if Some(v.pid) == self.exclude_pid {
            return None;
        }
        self.samples += 1;
        if let Some(s) = self.short_lived.as_mut() {
            s.sampled(v.pid);
        }
        let gone = self.exited.contains(&v.pid);
        self.pids.entry(v.pid).or_insert_with(|| if gone { None } else { procfs::owner_of(v.pid as i32) });
        self.note_kernel_addresses(misc_bits, &v);
        // Code no binary or symbol file describes may be JIT code registered since the
        // interface was last read.
        let ip = v.user_reg(sys::IP_REG_INDEX);
        if let (Some(post), Some(ip)) = (self.post.as_ref().filter(|_| unwinding), ip) {
            if !post.covers(v.pid, ip) && self.jit.watches(v.pid) {
                self.jit.poll_now(v.pid);
                self.sync_jit();
            }
        }
        if let Some(post) = self.post.as_mut().filter(|_| unwinding) {
            return post.rewrite(&v, st, sys::USER_REGS_MASK).map(Some);
        }
        if !self.trim {
            return Some(None);
        }
        let sp_index = (sys::USER_REGS_MASK & ((1u64 << sys::SP_REG_BIT) - 1)).count_ones();
        let mut limit =
            v.user_reg(sp_index as usize).and_then(|sp| Some(self.stacks.end_of(v.pid, sp)? - sp));
        if self.pressure {
            // Counted as cut only when the stack held more than is kept.
            let filled = v.stack_at.and_then(|at| sample_fields::stack_sizes(rec, at)).map(|s| s.1);
            let needed = filled.unwrap_or(0).min(limit.unwrap_or(u64::MAX));
            if needed > CUT_STACK_BYTES {
                self.cut_stacks += 1;
            }
            limit = Some(limit.map_or(CUT_STACK_BYTES, |l| l.min(CUT_STACK_BYTES)));
        }
        Some(v.stack_at.and_then(|at| sample_fields::trim_stack(rec, at, limit)))
    }

    /// Follows processes and threads: forks (for the unwinder, and threads that inherited
    /// their events), names and execs, exits.
    fn note_task(&mut self, type_: u32, misc_bits: u16, rec: &[u8]) {
        let pid = u32_at(rec, 8);
        match type_ {
            record_type::FORK => {
                if let (Some(tid), Some(forked)) =
                    (u32_at(rec, 16).filter(|_| !self.synthesizing), self.forked_tids.as_mut())
                {
                    forked.insert(tid);
                }
                // A pid used again.
                if let Some(pid) = pid.filter(|_| !self.exited.is_empty()) {
                    self.exited.remove(&pid);
                }
                if let (Some(pid), Some(ppid), Some(s)) =
                    (pid, u32_at(rec, 12), self.short_lived.as_mut().filter(|_| !self.synthesizing))
                {
                    s.fork(pid, ppid);
                }
                if let (Some(pid), Some(ppid), Some(post)) = (pid, u32_at(rec, 12), self.post.as_mut()) {
                    post.fork(ppid, pid);
                }
            }
            record_type::COMM => {
                let Some(pid) = pid else { return };
                if misc_bits & misc::COMM_EXEC != 0 {
                    self.jit.exec(pid);
                    if let Some(post) = self.post.as_mut() {
                        post.exec(pid);
                    }
                }
            }
            _ => {
                let (Some(pid), Some(tid)) = (pid, u32_at(rec, 16)) else { return };
                self.stacks.forget(pid);
                if tid == pid {
                    if let Some(s) = self.short_lived.as_mut() {
                        s.exit(pid, sample_fields::time_of(rec, |id| self.sample_types.get(id)));
                    }
                    self.exited.insert(pid);
                    self.jit.exit(pid);
                    if let Some(post) = self.post.as_mut() {
                        post.exit(pid);
                    }
                }
            }
        }
    }

    /// Writes the round, whose records may lie in the ring buffers whose data is `rings`.
    pub(crate) fn write_drained(&mut self, rings: &[&[u8]]) {
        if let Err(e) = self.writer.write_round_from(rings, &FxHashSet::default()) {
            self.error.get_or_insert(e);
        }
    }

    /// Writes the rest of a pass over the rings that began at `began` on the clock records are
    /// stamped with (None when they are stamped with another), once every ring is drained,
    /// leaving out the processes that began and ended in it without a sample.
    pub(crate) fn write_pass(&mut self, rings: &[&[u8]], began: Option<u64>) {
        let none = FxHashSet::default();
        let left_out = self.short_lived.as_mut().map_or(&none, |s| s.end_pass(began));
        if let Err(e) = self.writer.write_round_from(rings, left_out) {
            self.error.get_or_insert(e);
        }
    }

    /// Hands the JIT interface's new symbol files to the unwinder: their CFI unwinds JIT code.
    pub(crate) fn sync_jit(&mut self) {
        let fresh = self.jit.store.take_fresh();
        let Some(post) = self.post.as_mut() else { return };
        for f in fresh {
            post.jit_code(f.pid, f.code, &f.image);
        }
    }

    fn note_kernel_addresses(&mut self, misc_bits: u16, v: &sample_fields::SampleView<'_>) {
        if misc_bits & misc::CPUMODE_MASK == misc::KERNEL {
            self.kernel_hits.insert(v.ip);
        }
        let mut in_kernel = false;
        for &addr in &v.callchain {
            if addr >= sys::PERF_CONTEXT_MAX {
                in_kernel = addr == sys::PERF_CONTEXT_KERNEL;
            } else if in_kernel {
                self.kernel_hits.insert(addr);
            }
        }
    }

    fn note_mmap(&mut self, type_: u32, misc_bits: u16, rec: &[u8]) {
        if misc_bits & misc::CPUMODE_MASK == misc::KERNEL {
            return;
        }
        // pid, tid, addr, len, pgoff: the same place in MMAP and MMAP2.
        let pid = u32_at(rec, 8);
        let (addr, pgoff) = (u64_at(rec, 16), u64_at(rec, 32));
        let exec = exec_mapping(type_, misc_bits, rec);
        if let (Some(post), Some(pid), Some(addr), Some(len), Some(pgoff)) =
            (self.post.as_mut(), pid, addr, u64_at(rec, 24), pgoff)
        {
            let path = exec
                .map(|(name, _)| path_of(name))
                .or_else(|| is_vdso(type_, rec).then_some("[vdso]".into()));
            if let Some(path) = path {
                post.mmap(pid, addr, len, pgoff, &path);
            }
        }
        let Some((name, build_id)) = exec else { return };
        // Most mappings are of a binary met before: one lookup by the record's bytes.
        let dso = match self.dsos.get_mut(name) {
            Some(dso) => dso,
            None => {
                let path = path_of(name);
                if let Some(pid) = rperf_perfdata::jitdump_pid(&path) {
                    self.jitdumps.entry(path.into_owned()).or_insert_with(|| procfs::owner_of(pid));
                    return;
                }
                self.dsos.entry(name.into()).or_insert(Dso { build_id: None, jit: true })
            }
        };
        if dso.build_id.is_none() {
            dso.build_id = build_id.map(<[u8]>::to_vec);
        }
        if let (true, Some(pid), Some(addr), Some(pgoff)) = (dso.jit, pid, addr, pgoff) {
            dso.jit = self.jit.note_mapping(pid, addr, pgoff, &path_of(name));
            self.sync_jit();
        }
    }
}

/// A file name from a record, as text (checked as UTF-8 first: the lossy conversion is slower
/// on the common, valid name).
fn path_of(name: &[u8]) -> Cow<'_, str> {
    std::str::from_utf8(name).map_or_else(|_| String::from_utf8_lossy(name), Cow::Borrowed)
}

/// Whether an MMAP or MMAP2 record maps the vDSO.
fn is_vdso(type_: u32, rec: &[u8]) -> bool {
    let name_at = if type_ == record_type::MMAP2 { 72 } else { 40 };
    rec.get(name_at..).is_some_and(|name| name.starts_with(b"[vdso]\0"))
}

/// The file and build id of an executable, file-backed MMAP or MMAP2 record.
///
/// MMAP2 layout after the header: pid, tid (u32), addr, len, pgoff (u64), then 24 bytes of
/// maj/min/ino/generation or (with MMAP_BUILD_ID) a size byte, 3 reserved and 20 id bytes,
/// then prot, flags (u32) and the file name at byte 72.
fn exec_mapping(type_: u32, misc_bits: u16, rec: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let (exec, name_at, build_id) = if type_ == record_type::MMAP2 {
        let bid = if misc_bits & misc::MMAP_BUILD_ID != 0 {
            let n = (*rec.get(40)?).min(20) as usize;
            rec.get(44..44 + n)
        } else {
            None
        };
        (u32_at(rec, 64)? & 4 != 0, 72, bid)
    } else {
        // MMAP: pid, tid, addr, len, pgoff, then the name at byte 40; data maps are marked.
        (misc_bits & (1 << 13) == 0, 40, None)
    };
    if !exec {
        return None;
    }
    let name = rec.get(name_at..)?;
    let name = std::ffi::CStr::from_bytes_until_nul(name).map_or(name, |c| c.to_bytes());
    let real_file = name.starts_with(b"/") && !name.starts_with(b"/memfd:") && !name.ends_with(b" (deleted)");
    real_file.then_some((name, build_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procfs::MapLine;
    use crate::records::{RecordBuilder, SampleId};

    #[test]
    fn mmap2_records_give_path_and_build_id() {
        let b = RecordBuilder { sample_type: sample::IDENTIFIER | sample::TID | sample::TIME };
        let m = MapLine {
            start: 0x1000,
            end: 0x2000,
            perms: "r-xp".into(),
            pgoff: 0,
            major: 8,
            minor: 1,
            inode: 42,
            path: "/usr/lib/libx.so".into(),
        };
        let id: Vec<u8> = (1..=20).collect();
        let rec = b.mmap2(1, 1, &m, &m.path, Some(&id), &SampleId::default());
        let misc_bits = u16::from_le_bytes([rec[4], rec[5]]);
        assert_eq!(
            exec_mapping(record_type::MMAP2, misc_bits, &rec),
            Some((&b"/usr/lib/libx.so"[..], Some(&id[..])))
        );
        let data = MapLine { perms: "r--p".into(), ..m.clone() };
        let rec = b.mmap2(1, 1, &data, &data.path, None, &SampleId::default());
        assert_eq!(exec_mapping(record_type::MMAP2, misc::USER, &rec), None);
    }

    /// A SAMPLE (IDENTIFIER, TID, TIME) or an EXIT record of `pid`.
    fn task_record(type_: u32, pid: u32) -> Vec<u8> {
        use rperf_perfdata::encode::{put_header, put_u32, put_u64};
        let mut r = Vec::new();
        if type_ == record_type::SAMPLE {
            put_header(&mut r, type_, misc::USER, 32);
            put_u64(&mut r, 7);
            [pid, pid].into_iter().for_each(|v| put_u32(&mut r, v));
        } else {
            put_header(&mut r, type_, 0, 24);
            [pid, 1, pid, 1].into_iter().for_each(|v| put_u32(&mut r, v));
        }
        put_u64(&mut r, 1);
        r
    }

    #[test]
    fn a_process_that_exited_before_its_samples_were_drained_is_not_looked_up() {
        let dir = std::env::temp_dir().join(format!("rperf-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sink = Sink::new(&RecordOptions::new(crate::Target::SystemWide, dir.join("a.data"))).unwrap();
        sink.sample_types.insert(7, sample::IDENTIFIER | sample::TID | sample::TIME);
        // Three live processes: this one, its parent and init.
        let (me, parent) = (std::process::id(), std::os::unix::process::parent_id());
        sink.handle(&task_record(record_type::SAMPLE, me));
        assert!(sink.pids[&me].is_some(), "a live process's owner is looked up");
        // Its EXIT came first in this pass: nothing to find.
        sink.handle(&task_record(record_type::EXIT, parent));
        sink.handle(&task_record(record_type::SAMPLE, parent));
        assert_eq!(sink.pids[&parent], None);
        // A pid used again by a new process.
        sink.handle(&task_record(record_type::EXIT, 1));
        sink.handle(&RecordBuilder { sample_type: 0 }.fork(1, 1, 0, 0, &SampleId::default()));
        sink.handle(&task_record(record_type::SAMPLE, 1));
        assert!(sink.pids[&1].is_some(), "the new process is looked up");
        assert_eq!(sink.samples, 3);
        std::fs::remove_dir_all(&dir).ok();
    }
}
