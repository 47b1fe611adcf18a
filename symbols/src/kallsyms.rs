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
    let bytes = text.as_bytes();
    let mut index = Vec::with_capacity(bytes.len() / 40);
    let mut at = 0;
    while at < bytes.len() {
        let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| at + i);
        let line = &bytes[at..end];
        if let Some(space) = line.iter().position(|&b| b == b' ') {
            let is_text = matches!(line.get(space + 1), Some(b't' | b'T' | b'w' | b'W'));
            let addr = std::str::from_utf8(&line[..space]).ok().and_then(|a| u64::from_str_radix(a, 16).ok());
            if let (true, Some(addr)) = (is_text, addr.filter(|&a| a != 0)) {
                index.push((addr, at));
            }
        }
        at = end + 1;
    }
    index.sort_by_key(|e| e.0);
    index
}

/// Reads /proc/kallsyms. Err explains why kernel symbols are not available.
pub fn read_proc_text() -> Result<String, String> {
    let text =
        std::fs::read_to_string("/proc/kallsyms").map_err(|e| format!("cannot read /proc/kallsyms: {e}"))?;
    if find_address(&text, "_text").is_none() {
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
        return Err(format!(
            "/proc/kallsyms shows no kernel addresses to this user (kptr_restrict={restrict}, \
             perf_event_paranoid={}); kernel frames will not be symbolized; {remedy}",
            sysctl("perf_event_paranoid")
        ));
    }
    Ok(text)
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

/// Encodes the symbols that contain `hits` (and each one's successor, which bounds it) as
/// kallsyms text.
pub fn snapshot(syms: &[KernelSymbol], hits: &BTreeSet<u64>) -> String {
    let mut keep = BTreeSet::new();
    for name in ["_text", "_stext", "_etext"] {
        if let Some(i) = syms.iter().position(|s| s.name == name) {
            keep.insert(i);
        }
    }
    for &addr in hits {
        let i = syms.partition_point(|s| s.addr <= addr);
        if i > 0 {
            keep.insert(i - 1);
        }
        if i < syms.len() {
            keep.insert(i);
        }
    }
    let mut out = String::new();
    for i in keep {
        let s = &syms[i];
        out.push_str(&format!("{:016x} {} {}", s.addr, s.kind, s.name));
        if let Some(m) = &s.module {
            out.push_str(&format!("\t[{m}]"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_keeps_covering_symbols() {
        let syms = parse(
            "ffffffff81000000 T _text\nffffffff81000100 T foo\nffffffff81000200 t bar\n\
             ffffffff81000300 T baz\nffffffffc0000000 t modfn\t[ext4]\n",
        );
        let hits = [0xffffffff81000150u64].into_iter().collect();
        let snap = snapshot(&syms, &hits);
        assert!(snap.contains(" foo\n") && snap.contains(" bar\n") && !snap.contains("baz"));
        assert_eq!(parse(&snap).len(), 3);
        assert_eq!(syms.last().unwrap().module.as_deref(), Some("ext4"));
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
