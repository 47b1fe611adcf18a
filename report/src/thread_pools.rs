//! `--aggregate-threads`: the threads whose names match one pattern count as one thread, named
//! after the pattern, as simpleperf's report library names it.

use crate::profile::Thread;

/// The patterns, the name each gives its thread and that thread once seen.
#[derive(Clone, Default)]
pub struct ThreadPools {
    patterns: Vec<regex::Regex>,
    names: Vec<u32>,
    seen: Vec<Option<Thread>>,
}

impl ThreadPools {
    /// For these patterns (none: every thread counts as itself).
    pub fn new(patterns: &[regex::Regex]) -> ThreadPools {
        ThreadPools { patterns: patterns.to_vec(), names: Vec::new(), seen: vec![None; patterns.len()] }
    }

    /// Names the pools: `intern` gives a name's id in the model.
    pub fn name(&mut self, mut intern: impl FnMut(&str) -> u32) {
        self.names = self.patterns.iter().map(|r| intern(r.as_str())).collect();
    }

    /// The thread a sample of `thread`, named `name`, counts under: the first thread seen
    /// whose name matches the same pattern, named after the pattern.
    pub fn thread_of(&mut self, thread: Thread, name: &str) -> Thread {
        let Some(i) = self.patterns.iter().position(|r| r.is_match(name)) else { return thread };
        let comm = self.names.get(i).copied().unwrap_or(thread.comm);
        *self.seen[i].get_or_insert(Thread { comm, ..thread })
    }
}
