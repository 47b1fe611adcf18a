//! The GDB JIT interface, read while recording: runtimes that compile code at run time (LLVM's
//! MCJIT and ORC, ART, Mono, LuaJIT) describe each piece of code with an in-memory symbol file (an
//! ELF image) on a list that debuggers read from the process's memory. rperf reads the same list
//! from every recorded process that has one, copies each new symbol file into the recording with
//! the time it was seen and its code range, and notes when one goes away, so that a sample maps to
//! the code that was at its address at its time.
//!
//! The interface (GDB's "JIT Compilation Interface"), 64-bit layout:
//!
//! ```text
//! __jit_debug_descriptor: version u32, action_flag u32, relevant_entry *, first_entry *
//! jit_code_entry:         next *, prev *, symfile_addr *, symfile_size u64
//! ```
//!
//! ART extends both (magic `Android1` or `Android2` after the standard fields): the descriptor
//! gains flags, the sizes of both structs, a sequence lock (odd while the list changes) and the
//! time of the last action; each entry gains its registration time (CLOCK_MONOTONIC, the clock
//! rperf samples with unless `--clockid` picks another) and, with `Android2`, a sequence lock of
//! its own (odd once removed). ART lists in-memory dex files under `__dex_debug_descriptor`.
//!
//! A read is consistent or thrown away: the descriptor is read, the list walked, and the descriptor
//! read again; any change in between (or a lock held odd) means a retry, never a stored half. A
//! descriptor that did not change is not walked, and one that has never listed anything is read
//! less and less often.
//!
//! New entries wait in a queue and their symbol files are copied a few megabytes per poll (each
//! entry read again first, to see that it still describes the same file), so that a process
//! registering symbol files by the hundred thousand never holds up the ring buffers. What is copied
//! goes to `jit_store` (out of memory, within `JitLimits`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use rperf_perfdata::bytes::{u32_at, u64_at};
use rperf_perfdata::{JitReads, JitSymfile, SymfileKind};
use rperf_symbols::mapping_vaddr;

use crate::jit_layout::{code_range, exports_of, Descriptor, Entry, Exports, List, Memory, Read};
use crate::jit_store::{JitLimits, JitStore};
use crate::sys::sample_clock_ns;

/// How often a descriptor is read (simpleperf reads every 100 ms): a symbol file seen new was
/// registered after the read before, so this is how close its registration is known (for
/// runtimes that don't stamp it, all but ART).
const INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between reads of a descriptor that has never listed anything: nothing at
/// its addresses was registered before, so no sample can be misnamed by a late read.
const MAX_INTERVAL: Duration = Duration::from_millis(1600);
/// Attempts at a consistent read before waiting for the next poll.
const TRIES: usize = 8;
/// How often a changing list is walked whole, to notice removals.
const FULL_WALK_NS: u64 = 1_000_000_000;
/// `action_flag` after an unregistration.
const JIT_UNREGISTER_FN: u32 = 2;
/// How soon a descriptor is read again for a sample in code nothing describes.
const RECENT: Duration = Duration::from_millis(5);
/// The most entries one walk follows (a list that never ends is a torn read or a corrupt one).
const MAX_ENTRIES: usize = 1 << 20;
/// The most bytes of symbol files copied per poll, the most files, and the most time: the rest
/// wait for the next poll, so that the ring buffers are drained in time.
const POLL_BYTES: u64 = 16 << 20;
const POLL_FILES: usize = 4096;
const POLL_TIME: Duration = Duration::from_millis(1);
/// The most entries one walk reads per poll; a longer walk goes on at the next poll from where
/// it stopped (a list of 100,000 entries takes a fifth of a second to walk).
const WALK_ENTRIES: usize = 512;

/// One descriptor of one process, and what it listed at the last consistent read.
struct Watched {
    list: List,
    addr: u64,
    last: Option<Descriptor>,
    /// The entries listed, with the index of their stored symbol file.
    live: HashMap<Entry, usize>,
    next_read: Instant,
    interval: Duration,
    /// When the last consistent read happened (CLOCK_MONOTONIC ns): new entries were
    /// registered after it.
    last_read_ns: u64,
    /// Whether it ever listed anything.
    used: bool,
    /// When the whole list was last walked consistently.
    last_full_ns: u64,
    /// Entries found and not yet copied, oldest first, with the time they were known to be
    /// registered after; and the same entries, to look up.
    pending: VecDeque<(Entry, u64)>,
    queued: HashSet<Entry>,
    /// Where walks cut short by `WALK_ENTRIES` go on, with the time the entries they will find
    /// were known to be registered after (that of the walk they are part of).
    resume: Vec<(u64, u64)>,
}

impl Watched {
    fn new(list: List, addr: u64, last_read_ns: u64, last_full_ns: u64) -> Watched {
        let (live, pending, queued, resume) = Default::default();
        let next_read = Instant::now();
        Watched {
            list,
            addr,
            last: None,
            live,
            next_read,
            interval: INTERVAL,
            last_read_ns,
            used: false,
            last_full_ns,
            pending,
            queued,
            resume,
        }
    }
}

/// Reads the GDB JIT interface of the recorded processes.
#[derive(Default)]
pub(crate) struct JitDebugReader {
    enabled: bool,
    exports: rustc_hash::FxHashMap<String, Option<Exports>>,
    processes: BTreeMap<u32, Vec<Watched>>,
    /// Processes whose memory cannot be read (said once each).
    refused: HashSet<u32>,
    /// The symbol files copied so far.
    pub store: JitStore,
    pub reads: JitReads,
    /// Whether any recorded process had the interface.
    pub seen: bool,
    /// Messages for the user, taken by the recorder.
    pub notes: Vec<String>,
    /// Queued walks and copies wait until then (see `poll_process`).
    rest_until: Option<Instant>,
}

impl JitDebugReader {
    /// A reader; a disabled one (`--no-jit-interface`) reads nothing.
    pub fn new(enabled: bool, limits: JitLimits) -> JitDebugReader {
        JitDebugReader { enabled, store: JitStore::new(limits), ..Default::default() }
    }

    /// An executable mapping of `path` at `addr` (file offset `pgoff`) in process `pid`: when
    /// the binary exports a descriptor, the process is watched from now on and read at once.
    /// False when no mapping of `path` can matter (no descriptor, or the reader is off).
    pub fn note_mapping(&mut self, pid: u32, addr: u64, pgoff: u64, path: &str) -> bool {
        if !self.enabled || pid == 0 || pid == u32::MAX {
            return self.enabled;
        }
        let exports = match self.exports.get(path) {
            Some(known) => known,
            None => self.exports.entry(path.to_string()).or_insert_with(|| exports_of(path)),
        };
        let Some(exports) = exports.as_ref().filter(|e| !e.lists.is_empty()) else { return false };
        let Some(vaddr) = mapping_vaddr(&exports.segments, pgoff) else { return true };
        let bias = addr.wrapping_sub(vaddr);
        let watched = self.processes.entry(pid).or_default();
        let mut added = false;
        for &(list, vaddr) in &exports.lists {
            let at = vaddr.wrapping_add(bias);
            if watched.iter().any(|w| w.addr == at) {
                continue;
            }
            watched.push(Watched::new(list, at, 0, sample_clock_ns()));
            added = true;
        }
        if added {
            self.seen = true;
            self.poll_process(pid, true);
        }
        true
    }

    /// The process ran a new program: its old lists are gone.
    pub fn exec(&mut self, pid: u32) {
        if let Some(watched) = self.processes.remove(&pid) {
            let now = sample_clock_ns();
            self.close(watched, now);
        }
    }

    /// The process exited: a last read if its memory is still there, then its entries end.
    pub fn exit(&mut self, pid: u32) {
        if self.processes.contains_key(&pid) {
            self.poll_process(pid, true);
            let watched = self.processes.remove(&pid).unwrap_or_default();
            self.close(watched, sample_clock_ns());
        }
    }

    fn close(&mut self, watched: Vec<Watched>, now: u64) {
        for w in watched {
            for (_, i) in w.live {
                self.store.removed(i, now);
            }
            self.store.unread(w.pending.iter().map(|(e, _)| e.size));
            self.store.unwalked |= !w.resume.is_empty();
        }
    }

    /// Recording ends: what is still waiting is not read.
    pub fn finish(&mut self) {
        let now = sample_clock_ns();
        let all = std::mem::take(&mut self.processes);
        for (_, watched) in all {
            self.close(watched, now);
        }
    }

    /// Whether walks or copies wait for the next poll.
    pub fn has_work(&self) -> bool {
        self.processes.values().flatten().any(|w| !w.pending.is_empty() || !w.resume.is_empty())
    }

    /// When queued work may go on.
    pub fn work_at(&self) -> Option<Instant> {
        self.has_work().then(|| self.rest_until.unwrap_or_else(Instant::now))
    }

    /// When the next descriptor is due to be read.
    pub fn next_read(&self) -> Option<Instant> {
        self.processes.values().flatten().map(|w| w.next_read).min()
    }

    /// Whether `pid` has a descriptor rperf reads.
    pub fn watches(&self, pid: u32) -> bool {
        self.processes.contains_key(&pid)
    }

    /// Reads `pid`'s descriptors now, unless they were read in the last few milliseconds: a
    /// sample in code nothing describes yet may be in code registered since the last poll.
    pub fn poll_now(&mut self, pid: u32) {
        let recent = self.processes.get(&pid).is_some_and(|ws| {
            ws.iter().all(|w| w.next_read.saturating_duration_since(Instant::now()) + RECENT > w.interval)
        });
        if !recent {
            self.poll_process(pid, true);
        }
    }

    /// Reads every descriptor whose time has come.
    pub fn poll(&mut self) {
        let pids: Vec<u32> = self.processes.keys().copied().collect();
        for pid in pids {
            self.poll_process(pid, false);
        }
    }

    fn poll_process(&mut self, pid: u32, now_too: bool) {
        let Some(mut watched) = self.processes.remove(&pid) else { return };
        let now = Instant::now();
        let mut gone = false;
        for w in watched.iter_mut() {
            if !now_too && now < w.next_read {
                continue;
            }
            w.interval = match self.read_list(pid, w) {
                Read::Unchanged if !w.used => (w.interval * 2).min(MAX_INTERVAL),
                Read::Unchanged | Read::Changed | Read::Busy => INTERVAL,
                Read::Gone => {
                    gone = true;
                    break;
                }
            };
            if self.rest_until.is_none_or(|t| Instant::now() >= t) {
                let started = Instant::now();
                self.continue_walks(pid, w);
                self.copy_pending(pid, w);
                // Queued work takes at most a tenth of the time: the rest is the ring buffers'.
                self.rest_until = Some(Instant::now() + started.elapsed() * 9);
            }
            // Entries still waiting are copied at the next poll, not an interval later.
            let waiting = !w.pending.is_empty() || !w.resume.is_empty();
            w.next_read = if waiting { Instant::now() } else { Instant::now() + w.interval };
        }
        if gone {
            // Unreadable from now on: what it listed ends here.
            self.close(watched, sample_clock_ns());
        } else {
            self.processes.insert(pid, watched);
        }
    }

    /// One consistent read of a list.
    fn read_list(&mut self, pid: u32, w: &mut Watched) -> Read {
        let mem = Memory { pid };
        // A whole walk that the list changed under is not tried again this poll: the new
        // entries at the front are read instead.
        let mut whole = true;
        for attempt in 0..TRIES {
            if attempt > 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
            let before = match self.read_descriptor(&mem, w.addr) {
                Ok(d) => d,
                Err(read) => return read,
            };
            if before.locked() {
                continue;
            }
            if w.last == Some(before) {
                w.last_read_ns = sample_clock_ns();
                return Read::Unchanged;
            }
            // Runtimes put new entries first: walking up to the first known entry finds them.
            // The whole list is walked to notice removals: after an unregistration, and at
            // least once a second while the list changes.
            let now = sample_clock_ns();
            let full = whole
                && (before.action == JIT_UNREGISTER_FN || now.saturating_sub(w.last_full_ns) >= FULL_WALK_NS);
            let stop = (!full).then_some((&w.live, &w.queued));
            let Some((entries, cut)) = self.walk(&mem, &before, before.first, stop, WALK_ENTRIES) else {
                whole &= !full;
                continue;
            };
            // A whole walk longer than a poll's share is not made: removals are noticed on
            // lists short enough to walk at once.
            if full && cut != 0 {
                whole = false;
                continue;
            }
            // The list must not have changed while it was walked: ART's lock says so. GDB's
            // descriptor has no lock; entries found first are kept even when more came since
            // (they were on the list), but removals count only from a walk of the whole list
            // that nothing changed under.
            let unchanged = matches!(self.descriptor(&mem, w.addr), Ok(after) if after == before);
            if !unchanged && (full || before.art.is_some()) {
                whole &= !full;
                continue;
            }
            let now = sample_clock_ns();
            if full {
                self.forget_removed(w, &entries, now);
            }
            // The walk goes newest first; the queue is copied oldest first.
            queue(w, &entries, w.last_read_ns);
            if cut != 0 {
                w.resume.push((cut, w.last_read_ns));
            }
            w.used |= before.first != 0 || !w.live.is_empty();
            w.last = Some(before);
            w.last_read_ns = now;
            return Read::Changed;
        }
        Read::Busy
    }

    /// The descriptor at `addr`, or what that means: not mapped yet (the loader maps a library's
    /// data after its code: next poll), not readable (said once), or not a descriptor.
    fn read_descriptor(&mut self, mem: &Memory, addr: u64) -> Result<Descriptor, Read> {
        let pid = mem.pid;
        match self.descriptor(mem, addr) {
            Ok(d) => (d.version == 1).then_some(d).ok_or(Read::Gone),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EFAULT) | Some(libc::EIO)) => Err(Read::Busy),
            Err(e) => {
                if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES))
                    && self.refused.insert(pid)
                {
                    self.notes.push(format!(
                        "cannot read the JIT interface of pid {pid} ({e}); its JIT code stays unnamed \
                         (reading another user's process needs root or CAP_SYS_PTRACE, as perf_event_open does)"
                    ));
                }
                Err(Read::Gone)
            }
        }
    }

    /// After a walk of the whole list: entries no longer on it were removed at `now`.
    fn forget_removed(&mut self, w: &mut Watched, entries: &[Entry], now: u64) {
        let seen: HashSet<Entry> = entries.iter().copied().collect();
        w.live.retain(|e, i| {
            let keep = seen.contains(e);
            if !keep {
                self.store.removed(*i, now);
            }
            keep
        });
        w.pending.retain(|(e, _)| seen.contains(e));
        w.queued.retain(|e| seen.contains(e));
        w.last_full_ns = now;
    }

    /// Goes on with walks cut short, up to this poll's share of entries; what they find is
    /// queued.
    fn continue_walks(&mut self, pid: u32, w: &mut Watched) {
        let Some(d) = w.last else { return };
        let mem = Memory { pid };
        let mut left = WALK_ENTRIES;
        while left > 0 {
            let Some((from, seen_after)) = w.resume.pop() else { break };
            // A walk that runs into something torn is given up: the entries it would have
            // found stay unnamed.
            let Some((entries, cut)) = self.walk(&mem, &d, from, Some((&w.live, &w.queued)), left) else {
                continue;
            };
            left = left.saturating_sub(entries.len().max(1));
            queue(w, &entries, seen_after);
            if cut != 0 {
                w.resume.push((cut, seen_after));
            }
        }
    }

    /// Copies the symbol files of queued entries, oldest first, up to this poll's share; each
    /// entry is read again first and dropped unless it still describes the same file.
    fn copy_pending(&mut self, pid: u32, w: &mut Watched) {
        let mem = Memory { pid };
        let (mut bytes, mut files) = (0u64, 0usize);
        let started = Instant::now();
        while bytes < POLL_BYTES && files < POLL_FILES && started.elapsed() < POLL_TIME {
            let Some((e, seen_after)) = w.pending.pop_front() else { break };
            w.queued.remove(&e);
            if e.size == 0 || !self.store.admits(e.size) {
                continue;
            }
            files += 1;
            bytes += e.size;
            if !self.still_listed(&mem, w, &e) {
                continue;
            }
            let mut image = vec![0u8; e.size as usize];
            if mem.read(e.symfile, &mut image).is_err() {
                continue;
            }
            // A symbol file freed and reused since is not an ELF image any more.
            if w.list == List::Jit && object::File::parse(&image[..]).is_err() {
                continue;
            }
            self.reads.symfiles += 1;
            self.reads.bytes += image.len() as u64;
            let now = sample_clock_ns();
            let registered = if e.registered != 0 && e.registered <= now { e.registered } else { seen_after };
            let (code, kind) = match w.list {
                List::Jit => (code_range(&image), SymfileKind::Elf),
                List::Dex => ((e.symfile, e.symfile.saturating_add(e.size)), SymfileKind::Dex),
            };
            let f = JitSymfile { pid, kind, registered_ns: registered, removed_ns: u64::MAX, code, image };
            if let Some(i) = self.store.add(f) {
                w.live.insert(e, i);
            }
        }
    }

    /// Whether the entry at `e.at` still names `e`'s symbol file (and, for ART's Android2, is
    /// not marked removed).
    fn still_listed(&mut self, mem: &Memory, w: &Watched, e: &Entry) -> bool {
        let art = w.last.and_then(|d| d.art);
        let mut b = [0u8; 48];
        let len = if art.is_some() { 48 } else { 32 };
        if mem.read(e.at, &mut b[..len]).is_err() {
            return false;
        }
        self.reads.entries += 1;
        let removed = matches!(art, Some((2, _, _))) && u32_at(&b, 40).is_some_and(|seq| seq % 2 == 1);
        u64_at(&b, 16) == Some(e.symfile) && u64_at(&b, 24) == Some(e.size) && !removed
    }

    fn descriptor(&mut self, mem: &Memory, addr: u64) -> std::io::Result<Descriptor> {
        self.reads.descriptors += 1;
        let mut b = [0u8; Descriptor::ART];
        // ART's fields follow the standard ones; a standard descriptor may end the mapping.
        if mem.read(addr, &mut b).is_err() {
            b = [0u8; Descriptor::ART];
            mem.read(addr, &mut b[..Descriptor::STANDARD])?;
        }
        Ok(Descriptor::parse(&b))
    }

    /// The entries of the list from the entry at `from` on, up to the end, the first one in
    /// `stop`, or `limit` entries read; and the address where the walk stopped short of the
    /// end (0 when it did not). `None` when the walk ran into something torn.
    fn walk(
        &mut self,
        mem: &Memory,
        d: &Descriptor,
        from: u64,
        stop: Option<(&HashMap<Entry, usize>, &HashSet<Entry>)>,
        limit: usize,
    ) -> Option<(Vec<Entry>, u64)> {
        let mut out = Vec::new();
        let mut visited = HashSet::new();
        let mut at = from;
        while at != 0 {
            if visited.len() >= limit {
                return Some((out, at));
            }
            if out.len() >= MAX_ENTRIES || !visited.insert(at) {
                return None;
            }
            self.reads.entries += 1;
            let mut b = [0u8; 48];
            let len = if d.art.is_some() { 48 } else { 32 };
            mem.read(at, &mut b[..len]).ok()?;
            let u64_at = |o: usize| u64_at(&b, o).unwrap_or(0);
            let next = u64_at(0);
            let (registered, seq) = match d.art {
                Some(_) => (u64_at(32), u32_at(&b, 40).unwrap_or(0)),
                None => (0, 0),
            };
            // Android2 marks a removed entry with an odd lock before it leaves the list.
            let removed = matches!(d.art, Some((2, _, _))) && seq % 2 == 1;
            if !removed {
                let e = Entry { at, symfile: u64_at(16), size: u64_at(24), registered };
                if stop.is_some_and(|(copied, queued)| copied.contains_key(&e) || queued.contains(&e)) {
                    break;
                }
                out.push(e);
            }
            at = next;
        }
        Some((out, 0))
    }
}

/// Queues the entries a walk found (newest first) that are neither copied nor queued, oldest
/// first, as registered after `seen_after`.
fn queue(w: &mut Watched, entries: &[Entry], seen_after: u64) {
    for e in entries.iter().rev() {
        if !w.live.contains_key(e) && w.queued.insert(*e) {
            w.pending.push_back((*e, seen_after));
        }
    }
}

#[cfg(test)]
#[path = "jit_debug_tests.rs"]
mod tests;
