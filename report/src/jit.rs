//! The JIT symbol sources a runtime writes: perf maps (`/tmp/perf-PID.map`, lines of
//! `START SIZE NAME`) and jitdump files (`jit-PID.dump`, code-load and code-move records), and
//! the symbol files the recorder copied from the GDB JIT interface (`Symfiles`).

use std::collections::HashMap;

use rperf_perfdata::{JitSymfile, SymfileKind};

/// The symbol files runtimes registered through the GDB JIT interface, by process, with the
/// time each was registered: an address maps to the code that was there at the sample's time.
#[derive(Default)]
pub struct Symfiles {
    pub files: Vec<JitSymfile>,
    /// Each process's ELF files by where their code starts, and the longest code range: the
    /// files that may cover an address start at most that far before it.
    by_pid: HashMap<i32, (Vec<usize>, u64)>,
    /// Each process's registration and removal times, sorted: how many of them a time is
    /// past tells which files are live then.
    changes: HashMap<i32, Vec<u64>>,
}

impl Symfiles {
    /// Indexes the files of a recording's `RPERF_JIT_SYMFILES` section.
    pub fn new(files: Vec<JitSymfile>) -> Symfiles {
        let mut by_pid: HashMap<i32, (Vec<usize>, u64)> = HashMap::new();
        let mut changes: HashMap<i32, Vec<u64>> = HashMap::new();
        for (i, f) in files.iter().enumerate() {
            if f.kind == SymfileKind::Elf {
                let (v, longest) = by_pid.entry(f.pid as i32).or_default();
                v.push(i);
                *longest = (*longest).max(f.code.1.saturating_sub(f.code.0));
            }
            let c = changes.entry(f.pid as i32).or_default();
            c.push(f.registered_ns);
            if f.removed_ns != u64::MAX {
                c.push(f.removed_ns);
            }
        }
        for (v, _) in by_pid.values_mut() {
            v.sort_by_key(|&i| files[i].code.0);
        }
        for c in changes.values_mut() {
            c.sort_unstable();
        }
        Symfiles { files, by_pid, changes }
    }

    /// The ELF symbol file that described `addr` in process `pid` at `time`: of the files
    /// covering the address and live then, the one registered last (an address reused for new
    /// code belongs to the newer file from its registration on).
    pub fn find(&self, pid: i32, addr: u64, time: u64) -> Option<usize> {
        let (v, longest) = self.by_pid.get(&pid)?;
        let end = v.partition_point(|&i| self.files[i].code.0 <= addr);
        let start = v.partition_point(|&i| self.files[i].code.0 < addr.saturating_sub(*longest));
        v[start..end]
            .iter()
            .copied()
            .filter(|&i| {
                let f = &self.files[i];
                addr < f.code.1 && f.registered_ns <= time && time < f.removed_ns
            })
            .max_by_key(|&i| (self.files[i].registered_ns, i))
    }

    /// The ELF symbol files of `pid` live at `time`.
    pub fn live(&self, pid: i32, time: u64) -> impl Iterator<Item = usize> + '_ {
        self.by_pid.get(&pid).into_iter().flat_map(|(v, _)| v).copied().filter(move |&i| {
            let f = &self.files[i];
            f.registered_ns <= time && time < f.removed_ns
        })
    }

    /// Which set of files is live in `pid` at `time`, as a number that changes when the set
    /// does (for caches of what was built from them).
    pub fn epoch(&self, pid: i32, time: u64) -> usize {
        self.changes.get(&pid).map_or(0, |c| c.partition_point(|&t| t <= time))
    }
}

/// One line about a stored symbol file, for `rperf dump`: its process, kind, code range, size,
/// times and the functions it names.
pub fn describe_symfile(f: &JitSymfile) -> String {
    let removed = match f.removed_ns {
        u64::MAX => "still registered at the end".to_string(),
        t => format!("removed by {}.{:09}", t / 1_000_000_000, t % 1_000_000_000),
    };
    let kind = match f.kind {
        SymfileKind::Elf => "ELF",
        SymfileKind::Dex => "dex",
    };
    let names = match f.kind {
        SymfileKind::Elf => {
            let linked = rperf_symbols::jit::link(&f.image);
            match rperf_symbols::ElfInfo::from_bytes(std::path::Path::new("[JIT]"), &linked) {
                Ok(elf) => {
                    let mut v: Vec<String> = elf.symbols().iter().map(|s| s.name).take(8).collect();
                    if elf.symbols().len() > v.len() {
                        v.push("...".into());
                    }
                    format!(": {}", v.join(", "))
                }
                Err(_) => ": not a readable ELF image".to_string(),
            }
        }
        SymfileKind::Dex => String::new(),
    };
    format!(
        "pid {} {kind} {:#x}-{:#x}, {} bytes, registered {}.{:09}, {removed}{}",
        f.pid,
        f.code.0,
        f.code.1,
        f.image.len(),
        f.registered_ns / 1_000_000_000,
        f.registered_ns % 1_000_000_000,
        crate::escape::printable(&names)
    )
}

/// The code-load records of a jitdump file as (address, size, name); moved code follows its
/// move records. Reading stops at the first malformed record.
pub fn parse_jitdump(data: &[u8]) -> Vec<(u64, u64, String)> {
    use linux_perf_data::jitdump::{JitDumpReader, JitDumpRecord};
    let mut out = Vec::new();
    let mut by_index: HashMap<u64, usize> = HashMap::new();
    let Ok(mut reader) = JitDumpReader::new(std::io::Cursor::new(data)) else { return out };
    while let Ok(Some(raw)) = reader.next_record() {
        match raw.parse() {
            Ok(JitDumpRecord::CodeLoad(r)) => {
                let name = String::from_utf8_lossy(&r.function_name.as_slice()).into_owned();
                by_index.insert(r.code_index, out.len());
                out.push((r.code_addr, r.code_bytes.len() as u64, name));
            }
            Ok(JitDumpRecord::CodeMove(m)) => {
                if let Some(&i) = by_index.get(&m.code_index) {
                    out[i].0 = m.new_code_addr;
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    out
}

/// Parses a JIT symbol map: lines of `START SIZE NAME`, addresses and sizes in hex (with or
/// without `0x`). Malformed lines are skipped.
pub fn parse_perf_map(text: &str) -> Vec<(u64, u64, String)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ' ');
            let start = hex(it.next()?)?;
            let size = hex(it.next()?)?;
            let name = it.next()?.trim();
            (size > 0 && !name.is_empty()).then(|| (start, size, name.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symfile(pid: u32, code: (u64, u64), registered_ns: u64, removed_ns: u64) -> JitSymfile {
        JitSymfile { pid, kind: SymfileKind::Elf, registered_ns, removed_ns, code, image: Vec::new() }
    }

    #[test]
    fn symfiles_map_an_address_to_the_code_there_at_the_time() {
        // Two functions in the same memory, one after the other; another process's file.
        let s = Symfiles::new(vec![
            symfile(7, (0x1000, 0x1100), 100, 500),
            symfile(7, (0x1000, 0x1080), 450, u64::MAX),
            symfile(8, (0x1000, 0x1100), 0, u64::MAX),
        ]);
        assert_eq!(s.find(7, 0x1010, 50), None);
        assert_eq!(s.find(7, 0x1010, 300), Some(0));
        // Between the newer file's registration and the older one's removal: the newer.
        assert_eq!(s.find(7, 0x1010, 460), Some(1));
        assert_eq!(s.find(7, 0x1090, 460), Some(0));
        assert_eq!(s.find(7, 0x1090, 600), None);
        assert_eq!(s.find(8, 0x1090, 600), Some(2));
        assert_eq!(s.find(9, 0x1090, 600), None);
        assert_eq!(s.live(7, 300).collect::<Vec<_>>(), vec![0]);
        assert_eq!(s.live(7, 600).collect::<Vec<_>>(), vec![1]);
        assert!(s.epoch(7, 300) < s.epoch(7, 460) && s.epoch(7, 460) < s.epoch(7, 600));
        assert_eq!(s.epoch(7, 460), s.epoch(7, 499));
    }

    #[test]
    fn perf_map_lines() {
        let text = "7f00 20 LazyCompile:~hot /app.js:1\n0x8000 0x10 Interpreter\nbad line\n9000 0 empty\n";
        assert_eq!(
            parse_perf_map(text),
            vec![
                (0x7f00, 0x20, "LazyCompile:~hot /app.js:1".to_string()),
                (0x8000, 0x10, "Interpreter".to_string())
            ]
        );
    }

    /// A jitdump file: the 40-byte header, then records of (id u32, size u32, timestamp u64, body).
    fn jitdump(records: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&0x4A695444u32.to_le_bytes()); // magic "JiTD"
        d.extend_from_slice(&1u32.to_le_bytes()); // version
        d.extend_from_slice(&40u32.to_le_bytes()); // header size
        d.extend_from_slice(&62u32.to_le_bytes()); // EM_X86_64
        d.extend_from_slice(&0u32.to_le_bytes()); // padding
        d.extend_from_slice(&42u32.to_le_bytes()); // pid
        d.extend_from_slice(&0u64.to_le_bytes()); // timestamp
        d.extend_from_slice(&0u64.to_le_bytes()); // flags
        for (id, body) in records {
            d.extend_from_slice(&id.to_le_bytes());
            d.extend_from_slice(&(16 + body.len() as u32).to_le_bytes());
            d.extend_from_slice(&0u64.to_le_bytes());
            d.extend_from_slice(body);
        }
        d
    }

    fn code_load(index: u64, addr: u64, name: &str, code: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&42u32.to_le_bytes()); // pid
        b.extend_from_slice(&42u32.to_le_bytes()); // tid
        b.extend_from_slice(&addr.to_le_bytes()); // vma
        b.extend_from_slice(&addr.to_le_bytes()); // code address
        b.extend_from_slice(&(code.len() as u64).to_le_bytes());
        b.extend_from_slice(&index.to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(code);
        b
    }

    #[test]
    fn jitdump_loads_and_moves() {
        let mut mv = Vec::new();
        for v in [42u64 | (42 << 32), 0x1000, 0x1000, 0x5000, 4, 1] {
            mv.extend_from_slice(&v.to_le_bytes());
        }
        // pid/tid are two u32 in one u64 above; then vma, old address, new address, size, index.
        let d = jitdump(&[
            (0, code_load(1, 0x1000, "first", &[0x90; 4])),
            (0, code_load(2, 0x2000, "second", &[0x90; 8])),
            (1, mv),
        ]);
        let mut got = parse_jitdump(&d);
        got.sort();
        assert_eq!(got, vec![(0x2000, 8, "second".to_string()), (0x5000, 4, "first".to_string())]);
        // A file cut in a record keeps the records before it.
        assert_eq!(parse_jitdump(&d[..d.len() - 60]).len(), 2);
    }
}
