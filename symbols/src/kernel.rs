//! Kernel symbols from kallsyms text.

use crate::SymbolTable;

/// Kernel (and module) function symbols with absolute addresses.
#[derive(Default)]
pub struct KernelSymbols {
    /// The table.
    pub table: SymbolTable,
    /// (first symbol address, module) for each run of module symbols, by address; a run of
    /// core kernel symbols has None.
    modules: Vec<(u64, Option<String>)>,
    /// Symbols of a kernel image (`vmlinux`): the table's addresses are the file's, where
    /// `.text` starts at this address; a running kernel placed it elsewhere (KASLR), at the
    /// start of its kernel mapping.
    pub file_text: Option<u64>,
}

impl KernelSymbols {
    /// A table from symbols the recording carries.
    pub fn from_table(table: SymbolTable) -> KernelSymbols {
        KernelSymbols { table, modules: Vec::new(), file_text: None }
    }

    /// The function symbols of a kernel image (`vmlinux`), at the file's addresses; None when
    /// it has no `.text` section or no symbols.
    pub fn from_vmlinux(elf: &crate::ElfInfo) -> Option<KernelSymbols> {
        let text = elf.section_address(".text")?;
        let table = elf.symbols().clone();
        if table.is_empty() {
            return None;
        }
        Some(KernelSymbols { table, modules: Vec::new(), file_text: Some(text) })
    }

    /// Parses `/proc/kallsyms`-format text; only text symbols are kept. Hidden (all-zero)
    /// addresses give an empty table.
    pub fn from_kallsyms(text: &str) -> KernelSymbols {
        let mut raw = Vec::new();
        let mut owners = Vec::new();
        let text_symbols = crate::kallsyms::parse(text)
            .into_iter()
            .filter(|s| s.addr != 0 && matches!(s.kind, 't' | 'T' | 'w' | 'W'));
        for s in text_symbols {
            owners.push((s.addr, s.module));
            raw.push((s.addr, 0, s.name));
        }
        owners.dedup_by(|next, prev| next.1 == prev.1);
        let modules = if owners.iter().any(|o| o.1.is_some()) { owners } else { Vec::new() };
        KernelSymbols { table: SymbolTable::new(raw), modules, file_text: None }
    }

    /// The text symbols of `/proc/kallsyms`-format text that hold `addrs`, and nothing else:
    /// every line's address is read, but names only of the symbols needed, so a report
    /// with a few hundred kernel addresses never builds a table of the kernel's 100,000+
    /// symbols. Lookups of `addrs` answer as a table of the whole text would.
    pub fn from_kallsyms_for(text: &str, addrs: &[u64]) -> KernelSymbols {
        Self::from_kallsyms_index(text, &crate::kallsyms::text_symbol_index(text), addrs)
    }

    /// `from_kallsyms_for` with the index of `text` made already
    /// (`kallsyms::text_symbol_index`).
    pub fn from_kallsyms_index(text: &str, index: &[(u64, usize)], addrs: &[u64]) -> KernelSymbols {
        let mut wanted: Vec<u64> = addrs.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut raw = Vec::new();
        let mut modules = Vec::new();
        let mut last = None;
        for addr in wanted {
            let i = index.partition_point(|e| e.0 <= addr);
            let Some(&(start, _)) = index.get(i.wrapping_sub(1)) else { continue };
            if last == Some(start) {
                continue;
            }
            last = Some(start);
            // The symbol ends where the next one begins, as in a table of every symbol.
            let size = index.get(i).map_or(0, |next| next.0 - start);
            let first = index[..i].partition_point(|e| e.0 < start);
            for &(_, line) in &index[first..i] {
                // A line cut short (a damaged snapshot in a recording) names nothing.
                let Some(s) = crate::kallsyms::parse_line(&text[line..]) else { continue };
                modules.push((start, s.module));
                raw.push((start, size, s.name));
            }
        }
        modules.dedup_by(|next, prev| next.0 == prev.0);
        let modules = if modules.iter().any(|o| o.1.is_some()) { modules } else { Vec::new() };
        KernelSymbols { table: SymbolTable::new(raw), modules, file_text: None }
    }

    /// The loadable module whose code holds `addr` (`ext4`), None for the core kernel.
    pub fn module_of(&self, addr: u64) -> Option<&str> {
        let i = self.modules.partition_point(|o| o.0 <= addr);
        self.modules.get(i.checked_sub(1)?)?.1.as_deref()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_kallsyms() {
        let k = super::KernelSymbols::from_kallsyms(
            "ffffffff81000000 T _text\nffffffff81000100 T do_work\nffffffff81000200 D data\nffffffff81000300 t next\n",
        );
        assert_eq!(k.table.lookup(0xffffffff81000150).unwrap().name, "do_work");
        assert_eq!(k.module_of(0xffffffff81000150), None);
    }

    #[test]
    fn module_symbols_belong_to_their_module() {
        let k = super::KernelSymbols::from_kallsyms(
            "ffffffff81000000 T _text\nffffffff81000100 T do_work\n\
             ffffffffc0001000 t ext4_read\t[ext4]\nffffffffc0001100 t ext4_write\t[ext4]\n\
             ffffffffc0002000 t nf_hook\t[nf_tables]\n",
        );
        assert_eq!(k.module_of(0xffffffffc0001180), Some("ext4"));
        assert_eq!(k.module_of(0xffffffffc0002010), Some("nf_tables"));
        assert_eq!(k.module_of(0xffffffff81000110), None);
        assert_eq!(k.table.lookup(0xffffffffc0001180).unwrap().name, "ext4_write");
    }

    #[test]
    fn symbols_for_addresses_answer_as_the_whole_table() {
        let text = "ffffffff81000000 T _text\nffffffff81000100 T __do_work\nffffffff81000100 T do_work\n\
             ffffffff81000180 D data\nffffffff81000200 t next\nffffffffc0001000 t ext4_read\t[ext4]\n\
             ffffffffc0001100 t ext4_write\t[ext4]\n0000000000000000 A fixed_percpu_data\n";
        let whole = super::KernelSymbols::from_kallsyms(text);
        let addrs = [
            0xffffffff81000150,
            0xffffffff810001f0,
            0xffffffffc0001180,
            0xffffffff80000000,
            0xffffffffc0001010,
        ];
        let some = super::KernelSymbols::from_kallsyms_for(text, &addrs);
        assert!(some.table.len() < whole.table.len());
        for a in addrs {
            let name = |k: &super::KernelSymbols| k.table.lookup(a).map(|s| s.name.clone());
            assert_eq!(name(&some), name(&whole), "{a:x}");
            assert_eq!(some.module_of(a), whole.module_of(a), "{a:x}");
        }
        assert_eq!(some.table.lookup(0xffffffff81000150).unwrap().name, "do_work");
        let hidden = "0000000000000000 T _text\n0000000000000000 T foo\n";
        assert!(super::KernelSymbols::from_kallsyms_for(hidden, &[0x10]).table.is_empty());
    }
}
