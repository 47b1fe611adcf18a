//! The running kernel's text symbols, kept between reports. The kernel formats /proc/kallsyms
//! slowly (tens of milliseconds of system time for 100,000+ lines, more than reading a large
//! recording), yet the core kernel's symbols never change while it runs: they are kept, one
//! file per boot, in rperf's cache folder, and read from there while the same boot lasts.
//!
//! Symbols of modules, BPF programs and ftrace trampolines come and go: they are never kept,
//! and an address outside the core kernel's text is named from /proc/kallsyms itself.
//!
//! The file is in rperf's cache folder (`crate::cache`), readable by its owner only: kernel
//! addresses are secrets under KASLR.

use std::io::Write;

use crate::kallsyms::{find_address, text_symbol, text_symbol_index};

/// Kernel text symbols of this machine: /proc/kallsyms's text with its index, or the kept
/// symbols, mapped.
#[derive(Default)]
pub struct RunningKernel {
    /// /proc/kallsyms's lines.
    text: String,
    /// `kallsyms::text_symbol_index` of `text`.
    index: Vec<(u64, usize)>,
    /// The kept symbols: lines in address order after a header line, searched in place (only
    /// the lines lookups need are read).
    kept: Option<std::sync::Arc<memmap2::Mmap>>,
    /// The addresses `text` names as /proc/kallsyms would; None: every address (it is
    /// /proc/kallsyms).
    covered: Option<(u64, u64)>,
    /// Whether it came from the cache.
    pub cached: bool,
}

impl RunningKernel {
    /// The kept symbols of this boot when there are, else /proc/kallsyms's (keeping its core
    /// kernel symbols for the next report).
    pub fn load() -> RunningKernel {
        let boot = boot_key();
        let dir = boot.as_ref().and_then(|_| crate::cache::dir(""));
        if let (Some(dir), Some(boot)) = (&dir, &boot) {
            if let Some(kept) = read_kept(dir, &file_name(&boot.0), boot) {
                return kept;
            }
            // perf's copy of this kernel's symbols: its core's are kept from it (the rest, of
            // the boot it was made in, is named from /proc/kallsyms when asked for).
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            let copy = home.zip(crate::buildid::of_kernel()).and_then(|(home, id)| perf_copy(&home, &id));
            let copy = copy.filter(|(_, text)| Some(*text) == running_text());
            if let Some(kept) = copy
                .and_then(|(c, _)| keep(dir, boot, c))
                .and_then(|_| read_kept(dir, &file_name(&boot.0), boot))
            {
                return kept;
            }
            let kallsyms = std::fs::File::open("/proc/kallsyms").ok();
            let read = kallsyms.map(|f| std::io::BufReader::with_capacity(64 << 10, f));
            if let Some(kept) = read.and_then(|r| keep(dir, boot, r)) {
                return kept;
            }
        }
        // A cache that cannot be written only costs the next report time.
        RunningKernel::live()
    }

    /// /proc/kallsyms, read now.
    pub fn live() -> RunningKernel {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let index = text_symbol_index(&text);
        RunningKernel { text, index, kept: None, covered: None, cached: false }
    }

    /// The symbols that hold `addrs`, as `KernelSymbols::from_kallsyms_for` makes them.
    pub fn symbols_for(&self, addrs: &[u64]) -> crate::KernelSymbols {
        let Some(kept) = &self.kept else {
            return crate::KernelSymbols::from_kallsyms_index(&self.text, &self.index, addrs);
        };
        // The lines lookups read, as text of their own, and the lines not kept (if any).
        let (mut text, mut index) = (self.text.clone(), self.index.clone());
        for (addr, at) in sorted_index_for(kept, addrs) {
            let line = kept[at..].split(|&b| b == b'\n').next().unwrap_or_default();
            index.push((addr, text.len()));
            text.push_str(&String::from_utf8_lossy(line));
            text.push('\n');
        }
        index.sort_unstable_by_key(|e| (e.0, e.1));
        // The binary searches touched pages all over the kept file; what they read is copied.
        rperf_perfdata::mapped::let_go(kept, 0, kept.len() as u64);
        crate::KernelSymbols::from_kallsyms_index(&text, &index, addrs)
    }

    /// Whether every address of `addrs` is named here as /proc/kallsyms names it now.
    pub fn covers(&self, addrs: &[u64]) -> bool {
        match self.covered {
            None => true,
            Some((lo, hi)) => addrs.iter().all(|a| (lo..hi).contains(a)),
        }
    }

    /// Whether the kernel hides its addresses from this user (kptr_restrict); symbols are kept
    /// only where it does not.
    pub fn hidden(&self) -> bool {
        self.kept.is_none() && find_address(&self.text, "_text").is_none()
    }
}

/// The most of perf's copy of /proc/kallsyms read.
const PERF_COPY_LIMIT: u64 = 256 << 20;

/// Where the running kernel's `_text` is, from the first lines of /proc/kallsyms (the kernel
/// formats only the lines read); None where addresses are hidden from this user.
fn running_text() -> Option<u64> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open("/proc/kallsyms").ok()?.take(64 << 10).read_to_end(&mut head).ok()?;
    text_address(&head)
}

/// The address of `_text` in the whole lines of `head`, the start of a kallsyms text.
fn text_address(head: &[u8]) -> Option<u64> {
    let whole_lines = &head[..head.iter().rposition(|&b| b == b'\n')? + 1];
    find_address(std::str::from_utf8(whole_lines).ok()?, "_text")
}

/// perf's copy of the running kernel's /proc/kallsyms (`perf record` keeps one in its build-id
/// cache, `~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, under `home`) when it is a regular
/// file of this user's or root's, with the address of its `_text`: a kernel of the same build
/// id at the same address has the same core symbols. Module and BPF lines are of the boot the
/// copy was made in, and `keep` does not keep them.
fn perf_copy(home: &std::path::Path, build_id: &[u8]) -> Option<(impl std::io::BufRead, u64)> {
    use crate::trusted::{self, Owners};
    use std::io::BufRead;
    let path = home.join(".debug/[kernel.kallsyms]").join(crate::buildid::hex(build_id)).join("kallsyms");
    let (file, _) = trusted::open(&path, PERF_COPY_LIMIT, Owners::Trusted(None), false).ok()?;
    let mut copy = std::io::BufReader::with_capacity(64 << 10, std::io::Read::take(file, PERF_COPY_LIMIT));
    let text = text_address(copy.fill_buf().ok()?)?;
    Some((copy, text))
}

/// The boot's id and the kernel's release: the symbols kept for them hold while both last.
struct BootKey(String, String);

fn boot_key() -> Option<BootKey> {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let boot = read("/proc/sys/kernel/random/boot_id")?;
    let release = read("/proc/sys/kernel/osrelease")?;
    // The id names a file: only what a boot id is made of.
    let plain = !boot.is_empty() && boot.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    plain.then_some(BootKey(boot, release))
}

fn file_name(boot: &str) -> String {
    format!("kallsyms-{boot}")
}

fn header(boot: &BootKey) -> String {
    format!("# rperf kallsyms cache: boot {} kernel {}\n", boot.0, boot.1)
}

/// The kept symbols at `path`, when they were kept for this boot and kernel.
fn read_kept(dir: &crate::cache::Dir, name: &str, boot: &BootKey) -> Option<RunningKernel> {
    let map = dir.map(name, None)?;
    let start = header(boot).len();
    if !map.starts_with(header(boot).as_bytes()) || map.len() <= start || map.last() != Some(&b'\n') {
        return None;
    }
    let first = line_at(&map, start)?.0;
    let last = line_at(&map, map[..map.len() - 1].iter().rposition(|&b| b == b'\n')? + 1)?.0;
    Some(RunningKernel { kept: Some(map), covered: Some((first, last)), cached: true, ..Default::default() })
}

/// Whether `keep` keeps a line of /proc/kallsyms: module, BPF and trampoline symbols carry
/// their module's name; they are not kept.
fn is_kept(line: &str) -> bool {
    line.split_ascii_whitespace().nth(3).is_none()
}

/// A kallsyms line (ending in a newline) as text, with its address, when it names a text
/// symbol (`text_symbol`).
fn text_line(bytes: &[u8]) -> Option<(u64, &str)> {
    let line = std::str::from_utf8(bytes).ok()?;
    Some((text_symbol(line)?.0, line))
}

/// The address of the line at `at` and where the next line starts.
fn line_at(text: &[u8], at: usize) -> Option<(u64, usize)> {
    let rest = &text[at..];
    let end = rest.iter().position(|&b| b == b'\n').map_or(text.len(), |i| at + i + 1);
    let hex = &rest[..rest.iter().position(|&b| b == b' ')?];
    let addr = u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    Some((addr, end))
}

/// The part of `text_symbol_index` that lookups of `addrs` read, found by binary search in
/// kept symbols (lines in address order after a header line): for each address, the lines of
/// the symbol holding it and the first line of the next symbol.
fn sorted_index_for(text: &[u8], addrs: &[u64]) -> Vec<(u64, usize)> {
    let Some(first) = text.iter().position(|&b| b == b'\n').map(|i| i + 1) else { return Vec::new() };
    // The start of the line that holds byte `at`.
    let line_start = |at: usize| text[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1).max(first);
    let mut out = Vec::new();
    for &addr in addrs {
        // The first line whose address is over `addr`.
        let (mut lo, mut hi) = (first, text.len());
        while lo < hi {
            let mid = line_start(lo + (hi - lo) / 2);
            match line_at(text, mid) {
                Some((a, next)) if a <= addr => lo = next,
                _ => hi = mid,
            }
        }
        let Some(before) = (lo > first).then(|| line_start(lo - 1)) else { continue };
        let Some((start, _)) = line_at(text, before) else { continue };
        // Every line at the symbol's address, then the next symbol's first line.
        let mut at = before;
        while at > first {
            let prev = line_start(at - 1);
            if line_at(text, prev).map(|l| l.0) != Some(start) {
                break;
            }
            at = prev;
        }
        while let Some((a, next)) = (at < text.len()).then(|| line_at(text, at)).flatten() {
            out.push((a, at));
            if a != start {
                break;
            }
            at = next;
        }
    }
    out.sort_unstable_by_key(|e| (e.0, e.1));
    out.dedup();
    out
}

/// Keeps the core kernel's text symbols of /proc/kallsyms (`lines`) for the rest of the boot,
/// written as they are read to a new file beside the cache file, then renamed over it (files
/// of other boots are removed); returns them read back, mapped, with the other text symbols
/// (modules, BPF) held. The whole text is never held: read beside the loading of binaries, it
/// had raised the peak of a first report by 7 MiB. None when nothing is kept: the kernel hides
/// its addresses from this user, a core symbol is out of address order, or the file could
/// not be written.
fn keep(dir: &crate::cache::Dir, boot: &BootKey, mut lines: impl std::io::BufRead) -> Option<RunningKernel> {
    let name = file_name(&boot.0);
    let mut file = dir.create(&name).ok()?;
    file.write_all(header(boot).as_bytes()).ok()?;
    let (mut rest, mut index) = (String::new(), Vec::new());
    let (mut bytes, mut last, mut kept) = (Vec::new(), 0, 0usize);
    // Lines are read as bytes, each checked as text only for what it is parsed for: a hundred
    // thousand lines or more, on the path of a first report.
    for read in 0usize.. {
        bytes.clear();
        if lines.read_until(b'\n', &mut bytes).ok()? == 0 {
            break;
        }
        if bytes.last() != Some(&b'\n') {
            bytes.push(b'\n');
        }
        let Some((addr, line)) = text_line(&bytes) else {
            // Hidden addresses read as zeros, which name nothing.
            if kept == 0 && index.is_empty() && read >= 1000 {
                return None;
            }
            continue;
        };
        if !is_kept(line) {
            index.push((addr, rest.len()));
            rest.push_str(line);
        } else if addr < last {
            return None;
        } else {
            file.write_all(&bytes).ok()?;
            (last, kept) = (addr, kept + 1);
        }
    }
    if kept == 0 {
        return None;
    }
    file.finish().ok()?;
    for (other, _, _) in dir.files() {
        if other.starts_with("kallsyms-") && other != name {
            dir.remove(&other);
        }
    }
    let mut symbols = read_kept(dir, &name, boot)?;
    index.sort_by_key(|e| e.0);
    (symbols.text, symbols.index, symbols.covered, symbols.cached) = (rest, index, None, false);
    Some(symbols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn kernel(text: &str) -> RunningKernel {
        RunningKernel { text: text.to_string(), index: text_symbol_index(text), ..Default::default() }
    }

    const TEXT: &str = "ffffffff81000000 T _text\nffffffff81000100 D data\nffffffff81000200 t work\n\
                        ffffffff81000300 T _etext\nffffffffc0002000 t bpf_prog_1_x\t[bpf]\n\
                        ffffffffc0001000 t ext4_read\t[ext4]\n";

    #[test]
    fn only_core_text_symbols_are_kept_and_they_cover_the_core_only() {
        let dir = std::env::temp_dir().join(format!("rperf-kallsyms-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let boot = BootKey("1234-abcd".into(), "6.1.0".into());
        std::fs::write(dir.join("kallsyms-old-boot"), "stale").unwrap();
        let live = kernel(TEXT);
        let held = crate::cache::Dir::open(&dir).unwrap();
        // What a first report gets: the kept core, mapped, and the other lines, named as the
        // whole text names them, module ones too.
        let first = keep(&held, &boot, TEXT.as_bytes()).expect("kept");
        assert!(first.covers(&[0xffffffff81000250, 0xffffffffc0001010]) && !first.cached);
        assert!(first.text.contains("ext4_read") && !first.text.contains("work"), "{}", first.text);
        let addrs = [0xffffffff81000250, 0xffffffffc0001010, 0xffffffffc0002004, 0xffffffff81000000];
        let named = |k: &crate::KernelSymbols| {
            let module = |a| k.module_of(a).map(str::to_string);
            addrs
                .iter()
                .map(|&a| (k.table.lookup(a).map(|s| (s.name, s.start, s.end)), module(a)))
                .collect::<Vec<_>>()
        };
        let (a, b) = (first.symbols_for(&addrs), live.symbols_for(&addrs));
        assert_eq!(named(&a), named(&b));
        assert_eq!(a.module_of(0xffffffffc0001010), Some("ext4"));
        // What the next reports read: the core's text symbols only.
        let path = dir.join("kallsyms-1234-abcd");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert!(!dir.join("kallsyms-old-boot").exists());
        let kept = read_kept(&held, "kallsyms-1234-abcd", &boot).expect("kept for this boot");
        let file = std::fs::read_to_string(&path).unwrap();
        assert!(kept.cached && !file.contains("ext4") && !file.contains("bpf") && !file.contains("data"));
        assert!(kept.covers(&[0xffffffff81000250]));
        assert!(!kept.covers(&[0xffffffff81000250, 0xffffffffc0001010]));
        let addrs = [0xffffffff81000000, 0xffffffff81000250, 0xffffffff81000200, 0xffffffff81000001];
        let names = |k: &crate::KernelSymbols| {
            addrs.iter().map(|&a| k.table.lookup(a).map(|s| (s.name, s.start, s.end))).collect::<Vec<_>>()
        };
        assert_eq!(names(&kept.symbols_for(&addrs)), names(&live.symbols_for(&addrs)));
        assert_eq!(kept.symbols_for(&addrs).table.lookup(0xffffffff81000250).unwrap().name, "work");
        // Another boot's or kernel's file is not used.
        assert!(
            read_kept(&held, "kallsyms-1234-abcd", &BootKey("1234-abcd".into(), "6.2.0".into())).is_none()
        );
        // Hidden addresses, and core symbols out of order, keep nothing (and replace nothing).
        let hidden = "0000000000000000 T _text\n".repeat(1200);
        let disordered = "ffffffff81000200 t work\nffffffff81000000 T _text\n";
        let other = BootKey("5678-ef".into(), "6.1.0".into());
        for text in [hidden.as_str(), disordered, ""] {
            assert!(keep(&held, &other, text.as_bytes()).is_none(), "{text:.60}");
            assert!(!dir.join("kallsyms-5678-ef").exists() && path.exists());
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no file left behind");
        std::fs::remove_dir_all(&dir).ok();
    }
}
