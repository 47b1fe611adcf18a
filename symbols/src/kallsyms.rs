//! kallsyms text: parsing it, finding a symbol's address, and the snapshot stored in recordings
//! (the /proc/kallsyms lines that cover the kernel addresses the recording hit, so the kernel
//! can be symbolized later, elsewhere).

use std::collections::BTreeSet;

/// One kallsyms line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Address.
    pub addr: u64,
    /// Type letter (`t`, `T`, `W`, ...).
    pub kind: char,
    /// Name.
    pub name: String,
    /// Module, for symbols of loadable modules.
    pub module: Option<String>,
}

/// Parses kallsyms text. Returns symbols sorted by address; all-zero addresses (hidden by
/// kptr_restrict) give an empty list.
pub fn parse(text: &str) -> Vec<KernelSymbol> {
    let mut syms: Vec<KernelSymbol> = text.lines().filter_map(parse_line).collect();
    if syms.iter().all(|s| s.addr == 0) {
        return Vec::new();
    }
    syms.sort_by_key(|s| s.addr);
    syms
}

/// Parses one kallsyms line (`ADDR TYPE NAME [MODULE]`); only its first line when given more.
pub fn parse_line(line: &str) -> Option<KernelSymbol> {
    let line = line.split('\n').next()?;
    let mut it = line.split_whitespace();
    let addr = u64::from_str_radix(it.next()?, 16).ok()?;
    let kind = it.next()?.chars().next()?;
    let name = it.next()?.to_string();
    let module = it.next().map(|m| m.trim_matches(|c| c == '[' || c == ']').to_string());
    Some(KernelSymbol { addr, kind, name, module })
}

/// (address, offset of its line) of every text symbol (`t`, `T`, `w`, `W`) with a non-zero
/// address, sorted by address (lines of one address keep their order): an index of the text
/// that reads no names.
pub fn text_symbol_index(text: &str) -> Vec<(u64, usize)> {
    let mut index = Vec::with_capacity(text.len() / 40);
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if let Some((addr, _)) = text_symbol(line) {
            index.push((addr, at));
        }
        at += line.len();
    }
    index.sort_by_key(|e| e.0);
    index
}

/// A kallsyms line's address and the rest of the line (`T name`, `t name\t[module]`), when it
/// names a text symbol (`t`, `T`, `w`, `W`) at a non-zero address.
pub(crate) fn text_symbol(line: &str) -> Option<(u64, &str)> {
    let (addr, rest) = line.trim_end_matches('\n').split_once(' ')?;
    let addr = u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0)?;
    matches!(rest.as_bytes().first(), Some(b't' | b'T' | b'w' | b'W')).then_some((addr, rest))
}

/// Why /proc/kallsyms gives no kernel addresses to this user, with the remedy.
pub fn hidden_reason() -> String {
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .map_or("?".into(), |s| s.trim().to_string())
    };
    let restrict = sysctl("kptr_restrict");
    let remedy = if restrict == "0" {
        // With kptr_restrict=0, addresses show to users allowed to profile the kernel.
        "run as root (or with CAP_SYSLOG), or set `sysctl kernel.perf_event_paranoid=1`"
    } else {
        "run as root (or with CAP_SYSLOG), or set `sysctl kernel.kptr_restrict=0`"
    };
    format!(
        "/proc/kallsyms shows no kernel addresses to this user (kptr_restrict={restrict}, \
         perf_event_paranoid={}); kernel frames will not be symbolized; {remedy}",
        sysctl("perf_event_paranoid")
    )
}

/// The text symbols of kallsyms (`t`, `T`, `w`, `W`, with non-zero addresses), sorted by
/// address, each with the rest of its line: what a recording keeps while it runs, to store
/// the symbols its samples hit when it ends (`snapshot`). The lines are kept deflated, in
/// blocks, for as long as the recording runs (a tenth of the text's size); the blocks the
/// samples hit are inflated at the end.
#[derive(Debug, Default)]
pub struct TextTable {
    /// Each symbol's address, sorted.
    addrs: Vec<u64>,
    /// The number of each one's line.
    lines: Vec<u32>,
    /// The lines after their addresses (`T name` or `t name\t[module]`), each ending in a
    /// newline, deflated in blocks of about `BLOCK` bytes, back to back.
    deflated: Vec<u8>,
    /// Each block: the number of its first line, where it starts in `deflated`.
    blocks: Vec<(u32, usize)>,
    /// `_text` (else `_stext`): where the kernel's own code starts.
    pub text_start: Option<u64>,
    /// `_etext`: where it ends.
    pub text_end: Option<u64>,
}

/// Bytes of kallsyms lines deflated together.
const BLOCK: usize = 32 << 10;

impl TextTable {
    /// Reads kallsyms text line by line (none of it is kept whole). `start` hears where the
    /// kernel's code starts as soon as a line says (`_text`; `_stext` when the text has no
    /// `_text`), or None at the end when no line does (addresses hidden from this user).
    pub fn read(
        mut input: impl std::io::BufRead,
        mut start: impl FnMut(Option<u64>),
    ) -> std::io::Result<TextTable> {
        let mut t = TextTable::default();
        let (mut stext, mut told) = (None, false);
        let mut entries: Vec<(u64, u32)> = Vec::new();
        let (mut line, mut block, mut first) = (String::new(), String::new(), 0u32);
        // One deflater for every block: its state is allocated once.
        let mut deflater = flate2::Compress::new(flate2::Compression::fast(), false);
        while {
            line.clear();
            input.read_line(&mut line)? > 0
        } {
            let Some((addr, rest)) = text_symbol(&line) else { continue };
            match rest.get(2..) {
                Some("_text") if !told => {
                    (t.text_start, told) = (Some(addr), true);
                    start(Some(addr));
                }
                Some("_stext") => stext = stext.or(Some(addr)),
                Some("_etext") => t.text_end = t.text_end.or(Some(addr)),
                _ => {}
            }
            let n = u32::try_from(entries.len()).unwrap_or(u32::MAX);
            entries.push((addr, n));
            block.push_str(rest);
            block.push('\n');
            if block.len() >= BLOCK {
                t.add_block(first, &block, &mut deflater)?;
                first = n.saturating_add(1);
                block.clear();
            }
        }
        if !block.is_empty() {
            t.add_block(first, &block, &mut deflater)?;
        }
        if !told {
            t.text_start = stext;
            start(stext);
        }
        entries.sort_by_key(|e| e.0);
        (t.addrs, t.lines) = entries.into_iter().unzip();
        t.deflated.shrink_to_fit();
        t.blocks.shrink_to_fit();
        Ok(t)
    }

    /// Deflates `block`, the lines from number `first` on, after the blocks before it.
    fn add_block(&mut self, first: u32, block: &str, deflater: &mut flate2::Compress) -> std::io::Result<()> {
        self.blocks.push((first, self.deflated.len()));
        deflater.reset();
        // Deflated text is never much longer than the text.
        self.deflated.reserve(block.len() + block.len() / 8 + 64);
        let status =
            deflater.compress_vec(block.as_bytes(), &mut self.deflated, flate2::FlushCompress::Finish);
        match status {
            Ok(flate2::Status::StreamEnd) => Ok(()),
            Ok(_) => Err(std::io::Error::other("kallsyms: a block did not fit its deflated size")),
            Err(e) => Err(std::io::Error::other(e)),
        }
    }

    /// The symbols that contain `hits` (and each one's successor, which bounds it), with
    /// `_text`, `_stext` and `_etext`, as kallsyms text.
    pub fn snapshot(&self, hits: &BTreeSet<u64>) -> String {
        let mut keep = BTreeSet::new();
        for addr in [self.text_start, self.text_end].into_iter().flatten() {
            let i = self.addrs.partition_point(|&a| a < addr);
            keep.extend((i..self.addrs.len()).take_while(|&j| self.addrs[j] == addr));
        }
        for &addr in hits {
            let i = self.addrs.partition_point(|&a| a <= addr);
            if i > 0 {
                keep.insert(i - 1);
            }
            if i < self.addrs.len() {
                keep.insert(i);
            }
        }
        // Each block the kept lines lie in, inflated once, with where its lines start.
        let mut inflated: std::collections::HashMap<usize, (String, Vec<usize>)> = Default::default();
        let mut out = String::new();
        for i in keep {
            let (addr, n) = (self.addrs[i], self.lines[i]);
            let b = self.blocks.partition_point(|(first, _)| *first <= n).saturating_sub(1);
            let Some(&(first, from)) = self.blocks.get(b) else { continue };
            let to = self.blocks.get(b + 1).map_or(self.deflated.len(), |next| next.1);
            let (text, starts) = inflated.entry(b).or_insert_with(|| {
                let text = inflate(&self.deflated[from..to]);
                let starts =
                    std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect();
                (text, starts)
            });
            let Some(&at) = starts.get((n - first) as usize) else { continue };
            let line = text[at..].split('\n').next().unwrap_or("");
            out.push_str(&format!("{addr:016x} {line}\n"));
        }
        out
    }

    /// Symbols kept.
    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    /// Whether no symbol was kept.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

/// Text that `TextTable::add_block` deflated (empty if it is not).
fn inflate(bytes: &[u8]) -> String {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::DeflateDecoder::new(bytes).read_to_string(&mut text).map_or(String::new(), |_| text)
}

/// Finds the address of a global symbol in kallsyms text without parsing every line.
pub fn find_address(text: &str, name: &str) -> Option<u64> {
    let needle = format!(" {name}\n");
    let mut from = 0;
    while let Some(pos) = text[from..].find(&needle) {
        let end = from + pos;
        let line_start = text[..end].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[line_start..end];
        if let Some(addr) = line.split_whitespace().next().and_then(|a| u64::from_str_radix(a, 16).ok()) {
            if addr != 0 {
                return Some(addr);
            }
        }
        from = end + needle.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_keeps_covering_symbols() {
        let text = "0000000000000000 A fixed_percpu_data\nffffffff81000000 T _stext\n\
                    ffffffff81000000 T _text\nffffffff81000100 T foo\nffffffff81000200 t bar\n\
                    ffffffff81000300 T baz\nffffffff81000400 D some_data\nffffffff81000800 T _etext\n\
                    ffffffffc0000000 t modfn\t[ext4]\n";
        let mut started = Vec::new();
        let table = TextTable::read(text.as_bytes(), |s| started.push(s)).unwrap();
        assert_eq!(started, [Some(0xffffffff81000000)]);
        assert_eq!((table.text_start, table.text_end), (Some(0xffffffff81000000), Some(0xffffffff81000800)));
        assert_eq!(table.len(), 7, "data symbols and zero addresses are left out");
        let hits = [0xffffffff81000150u64, 0xffffffffc0000010].into_iter().collect();
        let snap = table.snapshot(&hits);
        assert!(snap.contains(" foo\n") && snap.contains(" bar\n") && !snap.contains("baz"), "{snap}");
        assert!(snap.contains("ffffffffc0000000 t modfn\t[ext4]\n"), "{snap}");
        let parsed = parse(&snap);
        assert_eq!(
            parsed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["_stext", "_text", "foo", "bar", "_etext", "modfn"]
        );
        assert_eq!(parsed.last().unwrap().module.as_deref(), Some("ext4"));
    }

    #[test]
    fn a_large_table_is_held_deflated_and_read_back_by_block() {
        // 30,000 text symbols (a few data symbols between), as long as a kernel's names.
        let mut text = String::from("ffffffff81000000 T _text\n");
        for i in 1..30_000u64 {
            let addr = 0xffffffff81000000 + i * 0x40;
            text.push_str(&format!("{addr:016x} t some_subsystem_function_number_{i}\n"));
            if i % 100 == 0 {
                text.push_str(&format!("{:016x} D data_{i}\n", addr + 8));
            }
        }
        text.push_str("ffffffffc0001000 t modfn\t[ext4]\n");
        let table = TextTable::read(text.as_bytes(), |_| {}).unwrap();
        assert_eq!(table.len(), 30_001);
        let held = table.deflated.len();
        assert!(table.blocks.len() > 10 && held * 4 < text.len(), "{held} bytes held of {}", text.len());
        // Hits in the first block, in the middle, in the last: each symbol and its successor.
        let hits = [0xffffffff81000005u64, 0xffffffff81000000 + 12_345 * 0x40 + 1, 0xffffffffc0001010];
        let snap = table.snapshot(&hits.into_iter().collect());
        let names: Vec<String> = parse(&snap).into_iter().map(|s| s.name).collect();
        let expected = ["_text", "some_subsystem_function_number_1", "some_subsystem_function_number_12345"];
        let expected = expected.into_iter().chain(["some_subsystem_function_number_12346", "modfn"]);
        assert_eq!(names, expected.collect::<Vec<_>>(), "{snap}");
        assert!(snap.contains("ffffffffc0001000 t modfn\t[ext4]\n"), "{snap}");
    }

    #[test]
    fn hidden_addresses_give_no_start() {
        let mut started = Vec::new();
        let table = TextTable::read("0000000000000000 T _text\n0000000000000000 T foo\n".as_bytes(), |s| {
            started.push(s)
        })
        .unwrap();
        assert_eq!(started, [None]);
        assert!(table.is_empty());
    }

    #[test]
    fn finds_addresses_by_name() {
        let text =
            "0000000000000000 A fixed_percpu_data\nffffffff81000000 T _text\nffffffff81000100 T _text_end\n";
        assert_eq!(find_address(text, "_text"), Some(0xffffffff81000000));
        assert_eq!(find_address(text, "_etext"), None);
    }

    #[test]
    fn hidden_addresses_give_nothing() {
        assert!(parse("0000000000000000 T _text\n0000000000000000 T foo\n").is_empty());
    }
}
