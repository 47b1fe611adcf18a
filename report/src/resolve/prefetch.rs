//! Binaries loaded while samples are still being read. Each binary a frame is first met in is
//! found, mapped and its symbol table read on a thread of the pool, beside the converting
//! thread (with two cores, the second is otherwise idle until naming starts), so that naming
//! at the end finds them loaded.
//!
//! Only what this machine holds is loaded so: with debuginfod servers, naming first fetches
//! what binaries lack (their debug files may hold the symbol table), so nothing is read ahead.
//! A symbol table over `AHEAD_MAX` bytes is read by naming, once the reader's memory is let go
//! of: node's (10 MB) read beside the conversion raised a node report's peak from 27 to 40 MiB.
//!
//! When naming reads DWARF, a binary's compressed debug sections are inflated ahead too, into
//! the cache folder (a stream, in bounded memory), and naming maps them: with a distribution's
//! debug files, inflating them had been most of what a first report did after the samples.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use rperf_symbols::BinaryFinder;

use super::binaries::{load_binary, Binary};
use super::types::{AddrKind, FrameAddr};
use crate::model::{DsoId, Model};

/// The largest symbol table read ahead, in bytes (cc1plus's, 2.1 MB, is).
const AHEAD_MAX: u64 = 4 << 20;

/// A binary loaded ahead, or None when it could not be (naming then tries again, and says
/// why).
type Loaded = (DsoId, Option<Arc<Binary>>);

/// The binaries being loaded ahead.
pub(super) struct Prefetch {
    /// A finder of this machine's files; None when nothing is loaded ahead.
    finder: Option<Arc<BinaryFinder>>,
    /// Whether naming reads DWARF: the binaries' debug sections are inflated ahead.
    dwarf: bool,
    /// The binaries asked for.
    asked: rustc_hash::FxHashSet<DsoId>,
    /// Frame addresses looked at so far.
    scanned: usize,
    /// Loads not answered yet.
    pending: usize,
    sender: Sender<Loaded>,
    /// Where loads answer (in a mutex: naming shares the resolver between threads).
    answers: Mutex<Receiver<Loaded>>,
}

impl Prefetch {
    /// Loads ahead what `finder` finds here, unless it fetches from debuginfod servers, with
    /// their DWARF when naming reads it (`dwarf`).
    pub(super) fn new(finder: &BinaryFinder, dwarf: bool) -> Prefetch {
        let (sender, answers) = channel();
        let finder = finder.debuginfod().is_none().then(|| Arc::new(finder.local_copy()));
        Prefetch {
            finder,
            dwarf,
            asked: Default::default(),
            scanned: 0,
            pending: 0,
            sender,
            answers: Mutex::new(answers),
        }
    }

    /// Starts loading the binaries of the frame addresses met since the last call, with what
    /// naming reads of them; of a binary `loaded` already (to unwind through it), its DWARF.
    pub(super) fn start(
        &mut self,
        addrs: &[FrameAddr],
        model: &Model,
        loaded: &HashMap<DsoId, Option<Arc<Binary>>>,
    ) {
        let Some(finder) = &self.finder else { return };
        for a in addrs.get(self.scanned..).unwrap_or_default() {
            if a.kind != AddrKind::File || !self.asked.insert(a.dso) {
                continue;
            }
            let held = match loaded.get(&a.dso) {
                // Its symbol table is read by naming, once the reader's memory is let go of:
                // libc's, read beside the pass over a DWARF recording, raised the report's
                // peak by 2 MiB and saved no time.
                Some(Some(b)) if self.dwarf => Some(b.clone()),
                Some(_) => continue,
                None => None,
            };
            let (finder, sender, dso, id) =
                (finder.clone(), self.sender.clone(), model.dsos[a.dso as usize].clone(), a.dso);
            self.pending += 1;
            let dwarf = self.dwarf;
            rayon::spawn(move || {
                // A binary that makes loading fail is loaded again by naming, which reports it.
                let load = std::panic::AssertUnwindSafe(|| {
                    let b = match held {
                        Some(b) => b,
                        None => {
                            let (Some(b), None) = load_binary(&finder, &dso) else { return None };
                            if b.elf.symbol_table_bytes() <= AHEAD_MAX {
                                b.elf.symbols();
                            }
                            b
                        }
                    };
                    if dwarf {
                        b.elf.inflate_dwarf_ahead();
                    }
                    Some(b)
                });
                let _ = sender.send((id, std::panic::catch_unwind(load).ok().flatten()));
            });
        }
        self.scanned = addrs.len();
    }

    /// The binaries loaded ahead, once every load started has ended.
    pub(super) fn finish(&mut self) -> Vec<(DsoId, Arc<Binary>)> {
        let mut out = Vec::new();
        let answers = self.answers.get_mut().unwrap_or_else(|e| e.into_inner());
        while self.pending > 0 {
            let Ok((dso, b)) = answers.recv() else { break };
            self.pending -= 1;
            out.extend(b.map(|b| (dso, b)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DsoKind;

    #[test]
    fn binaries_met_are_loaded_once_with_their_symbols() {
        let mut model = Model::default();
        let exe = std::env::current_exe().unwrap();
        let dso = model.dso(exe.to_str().unwrap(), None, DsoKind::File);
        let missing = model.dso("/no/such/binary", None, DsoKind::File);
        let at =
            |dso| FrameAddr { dso, key: 0x1000, kind: AddrKind::File, returns: false, in_map: 0, runtime: 0 };
        let addrs = vec![at(dso), at(missing), at(dso)];
        let mut p = Prefetch::new(&BinaryFinder::new(&[]), false);
        p.start(&addrs[..2], &model, &HashMap::new());
        p.start(&addrs, &model, &HashMap::new());
        let loaded = p.finish();
        assert_eq!(loaded.len(), 1, "the binary found, once; the missing one left to naming");
        assert_eq!(loaded[0].0, dso);
        assert!(!loaded[0].1.elf.symbols().is_empty(), "its symbol table is read");
        // A binary loaded already (to unwind through it) is not loaded again: only its DWARF
        // is read ahead, when naming reads DWARF. One that could not be loaded is left to
        // naming.
        let held = loaded[0].1.clone();
        let loaded = HashMap::from([(dso, Some(held.clone())), (missing, None)]);
        let mut p = Prefetch::new(&BinaryFinder::new(&[]), false);
        p.start(&addrs, &model, &loaded);
        assert!(p.finish().is_empty());
        let mut p = Prefetch::new(&BinaryFinder::new(&[]), true);
        p.start(&addrs, &model, &loaded);
        let again = p.finish();
        assert_eq!(again.len(), 1);
        assert!(Arc::ptr_eq(&again[0].1, &held), "the binary held is the one read");
    }
}
