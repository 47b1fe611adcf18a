//! The state of the recorded system over time: binaries (DSOs), processes with their
//! mappings, threads with their names. Records are applied in time order, so a sample sees the
//! mappings in force when it was taken.

use std::collections::HashMap;

/// Index of a DSO in the model.
pub type DsoId = u32;

/// What kind of code a DSO holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DsoKind {
    /// A file-backed binary.
    File,
    /// The kernel image or a module.
    Kernel,
    /// The vDSO.
    Vdso,
    /// Anonymous executable memory (code generated at run time, not named by the runtime).
    Anon,
    /// Code a runtime generated and named: a JIT symbol map or jitdump, or ART's JIT caches.
    Jit,
    /// Dex bytecode (`.vdex`, `.dex`, `.jar`): Java and Kotlin methods ART interprets.
    Dex,
    /// Addresses outside every mapping.
    Unknown,
}

/// How the code of a frame runs, in simpleperf's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExecType {
    /// Machine code of a binary or generated at run time (not by ART).
    Native,
    /// A Java or Kotlin method ART interprets (a frame in a dex file).
    Interpreted,
    /// A Java or Kotlin method ART compiled at run time (a frame in ART's JIT caches).
    Jit,
    /// ART's own code around Java methods: interpreter, trampolines, JIT plumbing.
    Art,
}

impl ExecType {
    /// The name JSON and pprof outputs use (simpleperf's `CallChainExecutionType`).
    pub fn name(self) -> &'static str {
        match self {
            ExecType::Native => "native_method",
            ExecType::Interpreted => "interpreted_jvm_method",
            ExecType::Jit => "jit_jvm_method",
            ExecType::Art => "art_method",
        }
    }

    /// A Java or Kotlin method, interpreted or compiled.
    pub fn is_java(self) -> bool {
        matches!(self, ExecType::Interpreted | ExecType::Jit)
    }
}

impl DsoKind {
    /// Code generated at run time, named or not.
    pub fn is_jit(self) -> bool {
        matches!(self, DsoKind::Jit | DsoKind::Anon)
    }
}

/// A binary as recorded.
#[derive(Clone, Debug)]
pub struct Dso {
    /// Path as recorded (`[kernel.kallsyms]`, `[vdso]`, ...).
    pub path: String,
    /// Build id, when the recording has it.
    pub build_id: Option<Vec<u8>>,
    /// Kind.
    pub kind: DsoKind,
    /// Its executable mappings as first recorded, (start, end, file offset), one per file
    /// range (a few at most): where outputs that give run-time addresses (pprof) place it.
    pub mapped: Vec<(u64, u64, u64)>,
}

/// Executable mappings kept per binary (`Dso::mapped`): one per loadable code segment.
const MAPPED_PER_DSO: usize = 8;

impl Dso {
    /// The name reports show: simpleperf's names for ART's JIT caches, the path otherwise.
    pub fn display_name(&self) -> &str {
        art_jit_cache(&self.path).unwrap_or(&self.path)
    }

    /// How code of this binary runs, before ART's frames are told apart (`java::shape`).
    pub fn exec_type(&self) -> ExecType {
        match self.kind {
            DsoKind::Dex => ExecType::Interpreted,
            DsoKind::Jit if art_jit_cache(&self.path).is_some() => ExecType::Jit,
            // The in-memory ELF files ART's JIT registers for debuggers.
            DsoKind::File
                if self.path.rsplit('/').next().is_some_and(|f| f.starts_with("TemporaryFile-")) =>
            {
                ExecType::Jit
            }
            _ => ExecType::Native,
        }
    }

    /// ART's runtime library, whose frames next to Java methods are ART's machinery.
    pub fn is_art_runtime(&self) -> bool {
        self.kind == DsoKind::File
            && (self.path.ends_with("/libart.so") || self.path.ends_with("/libartd.so"))
    }
}

/// The JIT cache of ART a path names (`[JIT app cache]`, `[JIT zygote cache]`): ART's
/// in-memory caches and the symbol files simpleperf writes for their methods
/// (`perf.data_jit_app_cache:START-END`).
pub fn art_jit_cache(path: &str) -> Option<&'static str> {
    if path.contains("jit_app_cache") || path == "[JIT app cache]" {
        Some("[JIT app cache]")
    } else if path.contains("jit_zygote_cache") || path == "[JIT zygote cache]" {
        Some("[JIT zygote cache]")
    } else {
        None
    }
}

/// One mapping of a DSO into an address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Start address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The DSO.
    pub dso: DsoId,
    /// Executable.
    pub exec: bool,
}

/// Mappings of one address space, sorted and non-overlapping.
#[derive(Clone, Debug, Default)]
pub struct AddressSpace {
    maps: Vec<Mapping>,
    /// Changed on every change, to a value no address space ever had, so that caches built
    /// from the maps (unwinders, resolved call chains) know to rebuild, even for a process
    /// id used again or a process made a copy of another's mappings by fork.
    pub generation: u64,
    /// It has mapped ART's runtime or Java code: shaping its stacks may hide their sampled
    /// frame (ART's machinery beside a Java method), so they keep their callers.
    pub runs_java: bool,
}

/// A generation no address space has had yet.
fn new_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl AddressSpace {
    /// Adds a mapping, cutting away what it covers of older ones.
    pub fn insert(&mut self, m: Mapping) {
        if m.end <= m.start {
            return;
        }
        let mut kept = Vec::with_capacity(self.maps.len() + 2);
        for old in self.maps.drain(..) {
            if old.end <= m.start || old.start >= m.end {
                kept.push(old);
                continue;
            }
            if old.start < m.start {
                kept.push(Mapping { end: m.start, ..old });
            }
            // The offset comes from the recording: a tail whose offset would pass 2^64 is
            // dropped (regression test `tails_with_overflowing_offsets_are_dropped`).
            if let Some(pgoff) = old.pgoff.checked_add(m.end - old.start).filter(|_| old.end > m.end) {
                kept.push(Mapping { start: m.end, pgoff, ..old });
            }
        }
        let at = kept.partition_point(|x| x.start < m.start);
        kept.insert(at, m);
        self.maps = kept;
        self.generation = new_generation();
    }

    /// The mapping containing `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// All mappings.
    pub fn maps(&self) -> &[Mapping] {
        &self.maps
    }
}

/// A thread.
#[derive(Clone, Debug)]
pub struct Thread {
    /// Its name (interned).
    pub comm: u32,
    /// Its process.
    pub pid: i32,
}

/// Processes, threads and DSOs.
#[derive(Clone, Default)]
pub struct Model {
    /// DSOs by id.
    pub dsos: Vec<Dso>,
    dso_index: HashMap<(String, Option<Vec<u8>>), DsoId>,
    /// Address spaces by pid.
    pub processes: rustc_hash::FxHashMap<i32, AddressSpace>,
    /// The kernel's address space (kernel image and modules).
    pub kernel: AddressSpace,
    /// Threads by tid.
    pub threads: rustc_hash::FxHashMap<i32, Thread>,
    /// Interned names.
    pub strings: Vec<String>,
    string_index: HashMap<String, u32>,
    /// Paths the recording says hold dex files (simpleperf's stored file types), besides those
    /// named so (`.vdex`, `.dex`, `.jar`).
    pub dex_paths: std::collections::HashSet<String>,
}

impl Model {
    /// Interns a string.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.string_index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_index.insert(s.to_string(), i);
        i
    }

    /// The DSO id for a path and build id, creating it on first use.
    pub fn dso(&mut self, path: &str, build_id: Option<Vec<u8>>, kind: DsoKind) -> DsoId {
        let key = (path.to_string(), build_id.clone());
        if let Some(&id) = self.dso_index.get(&key) {
            return id;
        }
        let id = self.dsos.len() as DsoId;
        self.dsos.push(Dso { path: path.to_string(), build_id, kind, mapped: Vec::new() });
        self.dso_index.insert(key, id);
        id
    }

    /// Classifies a recorded mapping path.
    pub fn kind_of(&self, path: &str) -> DsoKind {
        if path == "[vdso]" {
            DsoKind::Vdso
        } else if art_jit_cache(path).is_some() {
            DsoKind::Jit
        } else if self.dex_paths.contains(path) || [".vdex", ".dex", ".jar"].iter().any(|e| path.ends_with(e))
        {
            DsoKind::Dex
        } else if path.starts_with("[kernel.kallsyms]") || path.ends_with(".ko") {
            DsoKind::Kernel
        } else if path.starts_with("//anon")
            || path.starts_with("[anon")
            || path.starts_with("/memfd:")
            || path.is_empty()
            || path.starts_with("/dev/zero")
        {
            DsoKind::Anon
        } else {
            DsoKind::File
        }
    }

    /// Applies an mmap record.
    pub fn mmap(
        &mut self,
        pid: i32,
        m: (u64, u64, u64),
        path: &str,
        build_id: Option<Vec<u8>>,
        exec: bool,
        kernel: bool,
    ) {
        let (start, len, pgoff) = m;
        let kind = if kernel { DsoKind::Kernel } else { self.kind_of(path) };
        let name = if kernel && path.starts_with("[kernel.kallsyms]") { "[kernel.kallsyms]" } else { path };
        let dso = self.dso(name, build_id, kind);
        let mapping = Mapping { start, end: start.saturating_add(len), pgoff, dso, exec };
        let mapped = &mut self.dsos[dso as usize].mapped;
        let (end, file_end) = (mapping.end, pgoff.saturating_add(len));
        let overlaps = mapped.iter().any(|&(s, e, o)| pgoff < o.saturating_add(e - s) && o < file_end);
        if exec && len > 0 && !overlaps && mapped.len() < MAPPED_PER_DSO {
            mapped.push((start, end, pgoff));
        }
        if kernel {
            self.kernel.insert(mapping);
        } else {
            let d = &self.dsos[dso as usize];
            let java = d.is_art_runtime() || d.exec_type() != ExecType::Native;
            let space = self.processes.entry(pid).or_default();
            space.insert(mapping);
            space.runs_java |= java;
        }
    }

    /// Applies a COMM record. At an exec the old program's mappings stay until the new one's
    /// replace what they overlap, as simpleperf keeps them: a sample taken inside execve, after
    /// this record, still holds the old program's user addresses (its user registers change only
    /// when the new program starts).
    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, exec: bool) {
        let comm = self.intern(name);
        self.threads.insert(tid, Thread { comm, pid });
        if exec && pid == tid {
            if let Some(space) = self.processes.get_mut(&pid) {
                space.generation = new_generation();
            }
        }
    }

    /// Applies a FORK record: a new process gets a copy of its parent's mappings.
    pub fn fork(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32) {
        let parent_comm = self.threads.get(&ptid).or_else(|| self.threads.get(&ppid)).map(|t| t.comm);
        if let Some(comm) = parent_comm {
            self.threads.insert(tid, Thread { comm, pid });
        }
        if pid != ppid {
            if let Some(mut space) = self.processes.get(&ppid).cloned() {
                space.generation = new_generation();
                self.processes.insert(pid, space);
            }
        }
    }

    /// The thread's name, else its process's; the idle task is `swapper` and a thread the
    /// recording never named is `unknown`, as simpleperf names them.
    pub fn comm_of(&mut self, pid: i32, tid: i32) -> u32 {
        if let Some(t) = self.threads.get(&tid) {
            return t.comm;
        }
        if let Some(t) = self.threads.get(&pid) {
            return t.comm;
        }
        self.intern(if tid == 0 { "swapper" } else { "unknown" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_replace_what_they_cover() {
        let mut a = AddressSpace::default();
        a.insert(Mapping { start: 0x1000, end: 0x5000, pgoff: 0, dso: 1, exec: true });
        a.insert(Mapping { start: 0x2000, end: 0x3000, pgoff: 0, dso: 2, exec: true });
        assert_eq!(a.find(0x1800).unwrap().dso, 1);
        assert_eq!(a.find(0x2800).unwrap().dso, 2);
        let tail = a.find(0x3800).unwrap();
        assert_eq!((tail.dso, tail.pgoff), (1, 0x2000));
        assert!(a.find(0x5000).is_none());
    }

    #[test]
    fn every_change_and_every_fork_gets_a_generation_of_its_own() {
        let mut m = Model::default();
        let map = |m: &mut Model, pid: i32, dso: &str| {
            let dso = m.dso(dso, None, DsoKind::File);
            m.processes.entry(pid).or_default().insert(Mapping {
                start: 0x1000,
                end: 0x2000,
                pgoff: 0,
                dso,
                exec: true,
            });
            m.processes[&pid].generation
        };
        let parent = map(&mut m, 10, "/bin/a");
        m.fork(11, 10, 11, 10);
        let child = m.processes[&11].generation;
        assert_ne!(child, parent, "a forked copy is another address space");
        // The parent changes as the child did not: neither meets the other's generation.
        let changed = map(&mut m, 10, "/bin/b");
        assert!(![parent, child].contains(&changed));
        // A process id used again starts with a generation never seen.
        m.processes.remove(&11);
        let again = map(&mut m, 11, "/bin/c");
        assert!(![parent, child, changed].contains(&again));
    }

    #[test]
    fn tails_with_overflowing_offsets_are_dropped() {
        let mut a = AddressSpace::default();
        a.insert(Mapping { start: 0x1000, end: 0x5000, pgoff: u64::MAX - 0x100, dso: 1, exec: true });
        a.insert(Mapping { start: 0x2000, end: 0x3000, pgoff: 0, dso: 2, exec: true });
        assert_eq!(a.find(0x1800).unwrap().dso, 1);
        assert!(a.find(0x3800).is_none());
    }
}
