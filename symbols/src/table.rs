//! A sorted symbol table with address lookup.

/// One function symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    /// First address (SVMA for binaries, absolute for the kernel).
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The name as stored in the binary (mangled); see `demangled`.
    pub name: String,
}

impl Symbol {
    /// The demangled name. Demangling is done on demand, for symbols that samples hit, rather
    /// than for every symbol of every binary.
    pub fn demangled(&self) -> String {
        crate::demangle(&self.name)
    }
}

/// Symbols sorted by start address, non-overlapping lookups by binary search.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    syms: Vec<Symbol>,
}

/// How a symbol is bound, for choosing among aliases at one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Binding {
    /// STB_WEAK.
    Weak,
    /// STB_LOCAL.
    Local,
    /// STB_GLOBAL.
    Global,
}

/// The alias perf would print for an address: one with a size, then non-weak, then global,
/// then fewer leading underscores, then the longer name. Larger is better.
fn alias_rank(
    size: u64,
    binding: Binding,
    name: &str,
) -> (bool, bool, bool, std::cmp::Reverse<usize>, usize) {
    let underscores = name.len() - name.trim_start_matches('_').len();
    (
        size > 0,
        binding != Binding::Weak,
        binding == Binding::Global,
        std::cmp::Reverse(underscores),
        name.len(),
    )
}

impl SymbolTable {
    /// Builds a table from (start, size, raw name); sizes of 0 extend to the next symbol.
    pub fn new(raw: Vec<(u64, u64, String)>) -> SymbolTable {
        Self::with_bindings(raw.into_iter().map(|(a, s, n)| (a, s, n, Binding::Global)).collect())
    }

    /// Like `new`, choosing among aliases at one address by binding as perf does.
    pub fn with_bindings(mut raw: Vec<(u64, u64, String, Binding)>) -> SymbolTable {
        raw.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| alias_rank(b.1, b.3, &b.2).cmp(&alias_rank(a.1, a.3, &a.2)))
        });
        raw.dedup_by_key(|s| s.0);
        let mut syms: Vec<Symbol> = Vec::with_capacity(raw.len());
        for i in 0..raw.len() {
            let (start, size, ref name, _) = raw[i];
            let next = raw.get(i + 1).map_or(u64::MAX, |n| n.0);
            let end = if size == 0 { next } else { start.saturating_add(size) };
            syms.push(Symbol { start, end, name: name.clone() });
        }
        SymbolTable { syms }
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&Symbol> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr < s.end).then_some(s)
    }

    /// The symbols, by address.
    pub fn iter(&self) -> impl Iterator<Item = &Symbol> {
        self.syms.iter()
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_choose_like_perf() {
        let t = SymbolTable::with_bindings(vec![
            (0x100, 0x10, "__GI___exp".into(), Binding::Local),
            (0x100, 0x10, "exp@@GLIBC_2.29".into(), Binding::Global),
            (0x100, 0x10, "__exp".into(), Binding::Weak),
        ]);
        assert_eq!(t.lookup(0x100).unwrap().name, "exp@@GLIBC_2.29");
    }

    #[test]
    fn lookup_by_range() {
        let t = SymbolTable::new(vec![
            (0x100, 0x10, "a".into()),
            (0x200, 0, "b".into()),
            (0x300, 0x20, "c".into()),
        ]);
        assert_eq!(t.lookup(0x105).unwrap().name, "a");
        assert!(t.lookup(0x110).is_none());
        assert_eq!(t.lookup(0x2ff).unwrap().name, "b");
        assert_eq!(t.lookup(0x31f).unwrap().name, "c");
        assert!(t.lookup(0x50).is_none());
    }
}
