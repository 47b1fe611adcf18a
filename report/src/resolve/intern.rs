//! Interning: each function, source line and source file once, by id.

use std::collections::{HashMap, HashSet};

use super::types::{Func, FuncId};
use crate::model::DsoId;

/// A source position.
#[derive(Default)]
pub(super) struct Place {
    pub(super) file: Option<String>,
    pub(super) line: u32,
}

/// Functions, source lines and source files, each stored once.
#[derive(Default)]
pub(super) struct Interner {
    /// Interned functions.
    pub(super) funcs: Vec<Func>,
    /// Functions by the hash of their binary, name, inlined or not, and name as stored: C++
    /// overloads are functions of their own even when named without their parameters, as perf
    /// shows them. Looked up without copying the names (every frame address asks).
    func_index: rustc_hash::FxHashMap<u64, Vec<FuncId>>,
    /// Interned source lines.
    pub(super) srclines: Vec<String>,
    srcline_index: HashMap<String, u32>,
    /// Interned source file paths (for `Symbolized::places`).
    pub(super) files: Vec<String>,
    file_index: HashMap<String, u32>,
    /// Functions that stand for code without a symbol.
    pub(super) unnamed: HashSet<FuncId>,
}

impl Interner {
    pub(super) fn func(&mut self, dso: DsoId, name: &str, system: Option<&str>, inlined: bool) -> FuncId {
        use std::hash::{Hash, Hasher};
        let system = system.filter(|s| *s != name);
        let mut h = rustc_hash::FxHasher::default();
        (dso, name, inlined, system).hash(&mut h);
        let ids = self.func_index.entry(h.finish()).or_default();
        let funcs = &mut self.funcs;
        let same = |f: &Func| {
            f.dso == dso && f.inlined == inlined && f.name == name && f.system.as_deref() == system
        };
        if let Some(&id) = ids.iter().find(|&&id| same(&funcs[id as usize])) {
            return id;
        }
        let id = funcs.len() as FuncId;
        funcs.push(Func { dso, name: name.to_string(), inlined, system: system.map(str::to_string) });
        ids.push(id);
        id
    }

    pub(super) fn file(&mut self, place: &Place) -> (u32, u32) {
        let Some(file) = &place.file else { return (0, place.line) };
        if let Some(&id) = self.file_index.get(file) {
            return (id + 1, place.line);
        }
        let id = self.files.len() as u32;
        self.files.push(file.clone());
        self.file_index.insert(file.clone(), id);
        (id + 1, place.line)
    }

    pub(super) fn srcline(&mut self, s: String) -> u32 {
        if let Some(&id) = self.srcline_index.get(&s) {
            return id;
        }
        let id = self.srclines.len() as u32;
        self.srclines.push(s.clone());
        self.srcline_index.insert(s, id);
        id
    }
}
