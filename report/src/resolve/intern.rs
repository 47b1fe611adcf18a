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
    /// Functions by binary, name, inlined or not, and name as stored: C++ overloads are
    /// functions of their own even when named without their parameters, as perf shows them.
    func_index: HashMap<(DsoId, String, bool, Option<String>), FuncId>,
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
        let system = system.filter(|s| *s != name).map(str::to_string);
        let key = (dso, name.to_string(), inlined, system);
        if let Some(&id) = self.func_index.get(&key) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        self.funcs.push(Func { dso, name: key.1.clone(), inlined, system: key.3.clone() });
        self.func_index.insert(key, id);
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
