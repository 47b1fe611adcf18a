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

/// Symbols sorted by start address, non-overlapping lookups by binary search. Names are kept
/// where they are: in the mapped file's string table when the table was built from one (read
/// only for the symbols looked up), else together in one string.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    entries: Vec<Entry>,
    arena: String,
    mapped: Option<std::sync::Arc<memmap2::Mmap>>,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u64,
    end: u64,
    name: NameRef,
}

/// Where a name is: `len` bytes at `at` in the mapped file, or in the arena.
#[derive(Clone, Copy, Debug)]
struct NameRef {
    at: u64,
    len: u32,
    mapped: bool,
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
    pub fn with_bindings(raw: Vec<(u64, u64, String, Binding)>) -> SymbolTable {
        let borrowed: Vec<(u64, u64, &str, Binding)> =
            raw.iter().map(|(a, s, n, b)| (*a, *s, n.as_str(), *b)).collect();
        Self::with_names_in(borrowed, None)
    }

    /// Like `with_bindings`, for names that lie in `map` (a mapped binary whose string table
    /// they were read from): those are kept as places in it rather than copied. Names from
    /// elsewhere are copied.
    pub fn with_names_in(
        mut raw: Vec<(u64, u64, &str, Binding)>,
        map: Option<std::sync::Arc<memmap2::Mmap>>,
    ) -> SymbolTable {
        raw.sort_by(|a, b| {
            a.0.cmp(&b.0).then_with(|| alias_rank(b.1, b.3, b.2).cmp(&alias_rank(a.1, a.3, a.2)))
        });
        raw.dedup_by_key(|s| s.0);
        let mut arena = String::new();
        let mut entries = Vec::with_capacity(raw.len());
        let base = map.as_ref().map_or(0, |m| m.as_ptr() as usize);
        let map_len = map.as_ref().map_or(0, |m| m.len());
        for (i, &(start, size, name, _)) in raw.iter().enumerate() {
            let next = raw.get(i + 1).map_or(u64::MAX, |n| n.0);
            let end = if size == 0 { next } else { start.saturating_add(size) };
            let len = u32::try_from(name.len()).unwrap_or(u32::MAX);
            let name = name.get(..len as usize).unwrap_or("");
            let at = (name.as_ptr() as usize).wrapping_sub(base);
            let name = if map.is_some() && at.checked_add(name.len()).is_some_and(|e| e <= map_len) {
                NameRef { at: at as u64, len, mapped: true }
            } else {
                let at = arena.len() as u64;
                arena.push_str(name);
                NameRef { at, len, mapped: false }
            };
            entries.push(Entry { start, end, name });
        }
        arena.shrink_to_fit();
        let mapped = map.filter(|_| entries.iter().any(|e| e.name.mapped));
        SymbolTable { entries, arena, mapped }
    }

    fn name(&self, r: NameRef) -> &str {
        let (at, len) = (r.at as usize, r.len as usize);
        if r.mapped {
            let bytes = self.mapped.as_ref().and_then(|m| m.get(at..at + len)).unwrap_or_default();
            // Names were &str when the table was built, and the mapping is read-only.
            std::str::from_utf8(bytes).unwrap_or_default()
        } else {
            self.arena.get(at..at + len).unwrap_or_default()
        }
    }

    fn symbol(&self, e: &Entry) -> Symbol {
        Symbol { start: e.start, end: e.end, name: self.name(e.name).to_string() }
    }

    /// The symbol containing `addr`.
    pub fn lookup(&self, addr: u64) -> Option<Symbol> {
        let i = self.entries.partition_point(|s| s.start <= addr);
        let e = self.entries.get(i.checked_sub(1)?)?;
        (addr < e.end).then(|| self.symbol(e))
    }

    /// Whether a symbol contains `addr`.
    pub fn covers(&self, addr: u64) -> bool {
        let i = self.entries.partition_point(|s| s.start <= addr);
        i.checked_sub(1).is_some_and(|i| addr < self.entries[i].end)
    }

    /// The symbols, by address.
    pub fn iter(&self) -> impl Iterator<Item = Symbol> + '_ {
        self.entries.iter().map(|e| self.symbol(e))
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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
    fn names_in_a_mapping_stay_there() {
        let mut m = memmap2::MmapMut::map_anon(64).unwrap();
        m[..16].copy_from_slice(b"alpha\0beta\0gamma");
        let map = std::sync::Arc::new(m.make_read_only().unwrap());
        let text = std::str::from_utf8(&map[..16]).unwrap();
        let (alpha, beta) = (&text[0..5], &text[6..10]);
        let t = SymbolTable::with_names_in(
            vec![
                (0x300, 0x10, "@plt", Binding::Weak),
                (0x100, 0x10, alpha, Binding::Global),
                (0x200, 0, beta, Binding::Local),
            ],
            Some(map.clone()),
        );
        assert!(t.arena.len() == 4 && t.mapped.is_some(), "only @plt is copied");
        assert_eq!(t.lookup(0x105).unwrap().name, "alpha");
        let beta = t.lookup(0x250).unwrap();
        assert_eq!((beta.name.as_str(), beta.end), ("beta", 0x300));
        assert_eq!(t.lookup(0x30f).unwrap().name, "@plt");
        let names: Vec<String> = t.iter().map(|s| s.name).collect();
        assert_eq!(names, ["alpha", "beta", "@plt"]);
        assert!(t.covers(0x100) && !t.covers(0x110));
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
