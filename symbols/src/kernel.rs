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
}

impl KernelSymbols {
    /// A table from symbols the recording carries.
    pub fn from_table(table: SymbolTable) -> KernelSymbols {
        KernelSymbols { table, modules: Vec::new() }
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
        KernelSymbols { table: SymbolTable::new(raw), modules }
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
}
