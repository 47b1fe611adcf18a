//! The JIT symbol sources a runtime writes: perf maps (`/tmp/perf-PID.map`, lines of
//! `START SIZE NAME`) and jitdump files (`jit-PID.dump`, code-load and code-move records).

use std::collections::HashMap;

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
