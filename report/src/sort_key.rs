//! The keys of the text report's entries (`--sort`): their names and column titles.

/// A `--sort` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Command name.
    Comm,
    /// Process id.
    Pid,
    /// Thread id.
    Tid,
    /// Shared object.
    Dso,
    /// Function.
    Symbol,
    /// Source file and line of the sampled address (`file:line`).
    Srcline,
    /// The sampled address in its binary's own address space (simpleperf's `vaddr_in_file`).
    VaddrInFile,
    /// With `-b`: the shared object a branch left.
    DsoFrom,
    /// With `-b`: the function a branch left.
    SymbolFrom,
    /// With `-b`: the shared object a branch went to (the entry's `dso`).
    DsoTo,
    /// With `-b`: the function a branch went to (the entry's `symbol`).
    SymbolTo,
}

impl SortKey {
    /// Parses one key name.
    pub fn parse(s: &str) -> Option<SortKey> {
        Some(match s.trim() {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "tid" => SortKey::Tid,
            "dso" => SortKey::Dso,
            "symbol" | "sym" => SortKey::Symbol,
            "srcline" => SortKey::Srcline,
            "vaddr_in_file" => SortKey::VaddrInFile,
            "dso_from" => SortKey::DsoFrom,
            "symbol_from" => SortKey::SymbolFrom,
            "dso_to" => SortKey::DsoTo,
            "symbol_to" => SortKey::SymbolTo,
            _ => return None,
        })
    }

    /// Column title.
    pub fn title(&self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "Pid",
            SortKey::Tid => "Tid",
            SortKey::Dso => "Shared Object",
            SortKey::Symbol => "Symbol",
            SortKey::Srcline => "Source:Line",
            SortKey::VaddrInFile => "VaddrInFile",
            SortKey::DsoFrom => "Source Shared Object",
            SortKey::SymbolFrom => "Source Symbol",
            SortKey::DsoTo => "Target Shared Object",
            SortKey::SymbolTo => "Target Symbol",
        }
    }

    /// Whether the key is one of a branch's ends, for `-b` reports only.
    pub fn is_branch_end(&self) -> bool {
        matches!(self, SortKey::DsoFrom | SortKey::SymbolFrom | SortKey::DsoTo | SortKey::SymbolTo)
    }
}
