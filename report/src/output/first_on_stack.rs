//! Which entries of a report the stack being counted has met already, so that each counts the
//! stack once however often it recurs there.

use std::hash::Hash;

use rustc_hash::FxHashSet;

use crate::resolve::FuncId;

/// The entries met so far on one stack, kept for its allocations from stack to stack (a list
/// is searched in time quadratic in the stack's depth, which deep recursions made a large part
/// of `-g` reports).
pub(super) struct FirstOnStack<K> {
    keys: FxHashSet<K>,
    /// Where each function's frames are one entry and two functions' two: the stack each
    /// function was last met on, so that most frames are told apart without hashing.
    stack_of_func: Vec<u32>,
    stack: u32,
}

impl<K> Default for FirstOnStack<K> {
    fn default() -> Self {
        FirstOnStack { keys: FxHashSet::default(), stack_of_func: Vec::new(), stack: 0 }
    }
}

impl<K: Hash + Eq> FirstOnStack<K> {
    /// Starts a stack of functions out of `funcs`.
    pub(super) fn start(&mut self, funcs: usize) {
        self.keys.clear();
        if self.stack_of_func.len() < funcs {
            self.stack_of_func.resize(funcs, 0);
        }
        self.stack = self.stack.checked_add(1).unwrap_or_else(|| {
            self.stack_of_func.fill(0);
            1
        });
    }

    /// Whether `key` is met first on this stack: the entry of a frame of function `func`
    /// where each function's frames are one entry and two functions' two, else of a frame.
    pub(super) fn first(&mut self, func: Option<FuncId>, key: K) -> bool {
        match func.and_then(|f| self.stack_of_func.get_mut(f as usize)) {
            Some(last) => std::mem::replace(last, self.stack) != self.stack,
            None => self.keys.insert(key),
        }
    }
}
