//! Kernel symbols from kallsyms text.

use crate::SymbolTable;

/// Kernel (and module) function symbols with absolute addresses.
#[derive(Default)]
pub struct KernelSymbols {
    /// The table.
    pub table: SymbolTable,
}

impl KernelSymbols {
    /// A table from symbols the recording carries.
    pub fn from_table(table: SymbolTable) -> KernelSymbols {
        KernelSymbols { table }
    }

    /// Parses `/proc/kallsyms`-format text; only text symbols are kept. Hidden (all-zero)
    /// addresses give an empty table.
    pub fn from_kallsyms(text: &str) -> KernelSymbols {
        let mut raw = Vec::new();
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
            if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            raw.push((addr, 0, name.to_string()));
        }
        KernelSymbols { table: SymbolTable::new(raw) }
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
    }
}
