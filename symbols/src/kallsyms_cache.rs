//! The running kernel's text symbols, kept between reports. The kernel formats /proc/kallsyms
//! slowly (tens of milliseconds of system time for 100,000+ lines, more than reading a large
//! recording), yet the core kernel's symbols never change while it runs: they are kept, one
//! file per boot, in rperf's cache folder, and read from there while the same boot lasts.
//! Where `perf record` has kept its copy of them for this kernel, that copy is searched in
//! place instead, and nothing is kept.
//!
//! Symbols of modules, BPF programs and ftrace trampolines come and go: they are never kept,
//! and an address outside the core kernel's text is named from /proc/kallsyms itself.
//!
//! The file is in rperf's cache folder (`crate::cache`), readable by its owner only: kernel
//! addresses are secrets under KASLR.

use std::collections::BTreeSet;
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
    /// The kept symbols (or perf's copy of them): lines in address order, searched in place
    /// (only the lines lookups need are read).
    kept: Option<std::sync::Arc<memmap2::Mmap>>,
    /// Where those lines are in `kept`: after the header line of rperf's file, before the
    /// module lines of perf's copy.
    lines: std::ops::Range<usize>,
    /// The addresses `text` names as /proc/kallsyms would; None: every address (it is
    /// /proc/kallsyms).
    covered: Option<(u64, u64)>,
    /// Whether it was read from symbols kept earlier (rperf's file or perf's copy), not from
    /// /proc/kallsyms now.
    pub cached: bool,
}

impl RunningKernel {
    /// The kept symbols of this boot when there are, else perf's copy of this kernel's when it
    /// fits the running kernel, else /proc/kallsyms's (keeping its core kernel symbols for the
    /// next report).
    pub fn load() -> RunningKernel {
        if let Some(kept) = RunningKernel::kept() {
            return kept;
        }
        let boot = boot_key();
        let dir = boot.as_ref().and_then(|_| crate::cache::dir(""));
        if let (Some(dir), Some(boot)) = (&dir, &boot) {
            let kallsyms = std::fs::File::open("/proc/kallsyms").ok();
            let read = kallsyms.map(|f| std::io::BufReader::with_capacity(64 << 10, f));
            if let Some(kept) = read.and_then(|r| keep(dir, boot, r)) {
                return kept;
            }
        }
        // A cache that cannot be written only costs the next report time.
        RunningKernel::live()
    }

    /// The core kernel's symbols kept earlier in this boot (rperf's file, else perf's copy
    /// when it fits the running kernel), without reading /proc/kallsyms through; None when
    /// there are none.
    pub fn kept() -> Option<RunningKernel> {
        let boot = boot_key()?;
        let dir = crate::cache::dir("")?;
        if let Some(kept) = read_kept(&dir, &file_name(&boot.0), &boot) {
            return Some(kept);
        }
        // perf's copy of this kernel's symbols, searched in place as kept symbols are: nothing
        // to read through or to keep (its other lines, of the boot it was made in, are named
        // from /proc/kallsyms when asked for).
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from)?;
        let copy = crate::buildid::of_kernel().and_then(|id| perf_copy(&home, &id))?;
        copy.covered.is_some_and(|(text, _)| Some(text) == running_text()).then_some(copy)
    }

    /// /proc/kallsyms, read now.
    pub fn live() -> RunningKernel {
        let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
        let index = text_symbol_index(&text);
        RunningKernel { text, index, ..Default::default() }
    }

    /// The symbols that hold `addrs`, as `KernelSymbols::from_kallsyms_for` makes them.
    pub fn symbols_for(&self, addrs: &[u64]) -> crate::KernelSymbols {
        let Some(kept) = &self.kept else {
            return crate::KernelSymbols::from_kallsyms_index(&self.text, &self.index, addrs);
        };
        // The lines lookups read, as text of their own, and the lines not kept (if any).
        let (mut text, mut index) = (self.text.clone(), self.index.clone());
        for (addr, at) in sorted_index_for(&kept[..self.lines.end], self.lines.start, addrs) {
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

    /// Where the kernel's code starts in the kept symbols, as `TextTable` finds it in
    /// /proc/kallsyms: `_text`, else `_stext`, among the first lines.
    pub fn kept_text_start(&self) -> Option<u64> {
        let kept = self.kept.as_ref()?;
        let lines = &kept[self.lines.clone()];
        let head = &lines[..lines.len().min(64 << 10)];
        address_in_head(head, "_text").or_else(|| address_in_head(head, "_stext"))
    }

    /// Where the kernel's code ends in the kept symbols: `_etext`, looked for from the end
    /// (only the init code's symbols follow it), so that few pages are read.
    pub fn kept_text_end(&self) -> Option<u64> {
        let kept = self.kept.as_ref()?;
        let lines = &kept[self.lines.clone()];
        let needle = b" _etext\n";
        let found = lines.windows(needle.len()).rposition(|w| w == needle)?;
        let addr = line_at(lines, line_start(lines, 0, found))?.0;
        (addr != 0).then_some(addr)
    }

    /// Whether kept symbols (not /proc/kallsyms) name every address of `addrs`.
    pub fn kept_covers(&self, addrs: &[u64]) -> bool {
        self.kept.is_some() && self.covered.is_some() && self.covers(addrs)
    }

    /// The kept lines that `TextTable::snapshot` gives for `hits`, byte for byte: for each
    /// hit the last text symbol at or before it and the first one after it, and every text
    /// symbol at `start` and at `end` (`kept_text_start`, `kept_text_end`). None when a hit
    /// lies outside the kept core (a module's, a BPF program's: /proc/kallsyms names it).
    pub fn kept_snapshot(
        &self,
        hits: &BTreeSet<u64>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Option<String> {
        let span: Vec<u64> = hits.first().into_iter().chain(hits.last()).copied().collect();
        if !self.kept_covers(&span) {
            return None;
        }
        let kept = self.kept.as_ref()?;
        let (text, first) = (&kept[..self.lines.end], self.lines.start);
        let mut keep = BTreeSet::new();
        for addr in [start, end].into_iter().flatten() {
            let mut at = addr.checked_sub(1).map_or(first, |a| first_line_over(text, first, a));
            while let Some((a, next)) = (at < text.len()).then(|| line_at(text, at)).flatten() {
                if a != addr {
                    break;
                }
                if text_symbol_at(text, at).is_some() {
                    keep.insert(at);
                }
                at = next;
            }
        }
        for &hit in hits {
            let over = first_line_over(text, first, hit);
            let mut before = over;
            while before > first {
                before = line_start(text, first, before - 1);
                if text_symbol_at(text, before).is_some() {
                    keep.insert(before);
                    break;
                }
            }
            let mut after = over;
            while let Some((_, next)) = (after < text.len()).then(|| line_at(text, after)).flatten() {
                if text_symbol_at(text, after).is_some() {
                    keep.insert(after);
                    break;
                }
                after = next;
            }
        }
        let mut out = String::new();
        for at in keep {
            let line = text[at..].split(|&b| b == b'\n').next().unwrap_or_default();
            if let Some((addr, rest)) = std::str::from_utf8(line).ok().and_then(text_symbol) {
                out.push_str(&format!("{addr:016x} {rest}\n"));
            }
        }
        rperf_perfdata::mapped::let_go(kept, 0, kept.len() as u64);
        Some(out)
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
/// formats only the lines read: a page at a time, up to 64 KiB, until `_text`); None where
/// addresses are hidden from this user.
pub fn running_text() -> Option<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open("/proc/kallsyms").ok()?;
    let (mut head, mut page) = (Vec::new(), [0u8; 4096]);
    while head.len() < 64 << 10 {
        let n = file.read(&mut page).ok()?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&page[..n]);
        if let Some(text) = address_in_head(&head, "_text") {
            return Some(text);
        }
    }
    None
}

/// The address of symbol `name` in the whole lines of `head`, the start of a kallsyms text.
fn address_in_head(head: &[u8], name: &str) -> Option<u64> {
    let whole_lines = &head[..head.iter().rposition(|&b| b == b'\n')? + 1];
    find_address(std::str::from_utf8(whole_lines).ok()?, name)
}

/// perf's copy of the running kernel's /proc/kallsyms (`perf record` keeps one in its build-id
/// cache, `~/.debug/[kernel.kallsyms]/BUILD_ID/kallsyms`, under `home`) when it is a regular
/// file of this user's or root's, mapped: its core's lines, which /proc/kallsyms lists first,
/// in address order, covering from `_text` (where the copy's core starts; the caller checks it
/// against the running kernel's: a kernel of the same build id at the same address has the
/// same core symbols). Module and BPF lines are of the boot the copy was made in: not used.
fn perf_copy(home: &std::path::Path, build_id: &[u8]) -> Option<RunningKernel> {
    use crate::trusted::{self, Owners};
    let path = home.join(".debug/[kernel.kallsyms]").join(crate::buildid::hex(build_id)).join("kallsyms");
    let (file, _) = trusted::open(&path, PERF_COPY_LIMIT, Owners::Trusted(None), false).ok()?;
    let map = rperf_perfdata::mapped::map(&file).ok()?;
    in_place(std::sync::Arc::new(map))
}

/// Kallsyms lines (`map`), core first, searched in place: the core's lines, covering from its
/// `_text` to its last line. None when `_text` is not among the first 64 KiB of lines.
fn in_place(map: std::sync::Arc<memmap2::Mmap>) -> Option<RunningKernel> {
    let end = core_end(&map);
    let core = &map[..end];
    let text = address_in_head(&core[..end.min(64 << 10)], "_text")?;
    // The last text symbol's line.
    let mut at = end;
    let last = loop {
        at = core[..at.checked_sub(1)?].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if let Some(addr) = text_symbol_at(core, at) {
            break addr;
        }
    };
    let covered = Some((text, last)).filter(|(text, last)| text < last);
    Some(RunningKernel { kept: Some(map), lines: 0..end, covered, cached: true, ..Default::default() })
}

/// Where the lines of kallsyms `text` that name a module (`\t[ext4]`, `\t[bpf]`) start: the
/// kernel lists them after the core's.
fn core_end(text: &[u8]) -> usize {
    let line_end = |at: usize| text[at..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| at + i + 1);
    // Lines before `lo` are the core's; the line at `hi`, when there is one, names a module.
    let (mut lo, mut hi) = (0, text.len());
    while lo < hi {
        let mid = line_start(text, 0, lo + (hi - lo) / 2).max(lo);
        let end = line_end(mid);
        if text[mid..end].contains(&b'\t') {
            hi = mid;
        } else {
            lo = end;
        }
    }
    lo
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
    let lines = start..map.len();
    Some(RunningKernel {
        kept: Some(map),
        lines,
        covered: Some((first, last)),
        cached: true,
        ..Default::default()
    })
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

/// The address of the line at `at` when it names a text symbol (`text_symbol`).
fn text_symbol_at(text: &[u8], at: usize) -> Option<u64> {
    let (_, next) = line_at(text, at)?;
    Some(text_line(&text[at..next])?.0)
}

/// The address of the line at `at` and where the next line starts.
fn line_at(text: &[u8], at: usize) -> Option<(u64, usize)> {
    let rest = &text[at..];
    let end = rest.iter().position(|&b| b == b'\n').map_or(text.len(), |i| at + i + 1);
    let hex = &rest[..rest.iter().position(|&b| b == b' ')?];
    let addr = u64::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    Some((addr, end))
}

/// Where the line that holds byte `at` of `text` starts, `first` at the earliest.
fn line_start(text: &[u8], first: usize, at: usize) -> usize {
    text[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1).max(first)
}

/// Where the first line of `text` (lines in address order from `first`) whose address is over
/// `addr` starts; the end of `text` when there is none.
fn first_line_over(text: &[u8], first: usize, addr: u64) -> usize {
    let (mut lo, mut hi) = (first, text.len());
    while lo < hi {
        let mid = line_start(text, first, lo + (hi - lo) / 2);
        match line_at(text, mid) {
            Some((a, next)) if a <= addr => lo = next,
            _ => hi = mid,
        }
    }
    lo
}

/// The part of `text_symbol_index` that lookups of `addrs` read, found by binary search in
/// kept symbols (`text`: lines in address order from `first`; only text symbols count, as in
/// `text_symbol_index`): for each address, the lines of the symbol holding it and the first
/// line of the next symbol.
fn sorted_index_for(text: &[u8], first: usize, addrs: &[u64]) -> Vec<(u64, usize)> {
    let text_at = |at: usize| text_symbol_at(text, at);
    let mut out = Vec::new();
    for &addr in addrs {
        let lo = first_line_over(text, first, addr);
        // The last text symbol's line at or before `addr`.
        let mut before = lo;
        let start = loop {
            if before <= first {
                break None;
            }
            before = line_start(text, first, before - 1);
            if let Some(a) = text_at(before) {
                break Some(a);
            }
        };
        let Some(start) = start else { continue };
        // Every text line at the symbol's address, then the next text symbol's first line.
        let mut at = before;
        while at > first {
            let prev = line_start(text, first, at - 1);
            match line_at(text, prev) {
                Some((a, _)) if a == start => at = prev,
                _ => break,
            }
        }
        while let Some((a, next)) = (at < text.len()).then(|| line_at(text, at)).flatten() {
            if text_at(at).is_some() {
                out.push((a, at));
                if a != start {
                    break;
                }
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
#[path = "kallsyms_cache_tests.rs"]
mod tests;
