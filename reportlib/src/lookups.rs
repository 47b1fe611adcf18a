//! What callers look up besides the sample at hand's frames: its counters and process, the
//! recording's threads and build ids, and a binary's whole symbol table. Each answer stays
//! valid until the next call of the same function (strings until the handle is destroyed).

use std::ffi::c_char;

use crate::ctypes::{BuildIdPair, EventCounter, EventCountersView, Symbol, Thread};
use crate::frames::{c_string, Session, Strings};

impl Session {
    /// The counters of the sample at hand (`--add-counter` recordings): each counter's event,
    /// id and running total as recorded; none for other recordings.
    pub fn event_counters(&mut self) -> Result<*const EventCountersView, String> {
        self.current("GetEventCountersOfCurrentSample")?;
        if self.answers.event_names.is_empty() {
            let names = self.facts()?.events.iter().map(|e| c_string(e.clone())).collect();
            self.answers.event_names = names;
        }
        let loaded = self.loaded.as_ref().expect("a sample is at hand");
        let a = &mut self.answers;
        a.counters.clear();
        for g in &loaded.sample.group {
            let Some(name) = a.event_names.get(g.event as usize) else { continue };
            a.counters.push(EventCounter { name: name.as_ptr(), id: g.id, count: g.value });
        }
        let at = if a.counters.is_empty() { std::ptr::null() } else { a.counters.as_ptr() };
        a.counters_view = EventCountersView { nr: a.counters.len(), event_counter: at };
        Ok(&a.counters_view)
    }

    /// The name of the sample at hand's process (its main thread's name when it was taken);
    /// `unknown` when the recording never named it.
    pub fn process_name(&mut self) -> Result<*const c_char, String> {
        self.current("GetProcessNameOfCurrentSample")?;
        let loaded = self.loaded.as_ref().expect("a sample is at hand");
        Ok(match loaded.sample.process {
            Some(comm) => {
                let names = &loaded.profile.names;
                Strings::get(&mut self.strings.comms, comm, || names.comm(comm).to_string())
            }
            None => self.strings.unknown.as_ptr(),
        })
    }

    /// A thread the recording described, as it was at the end of the recording; pid -1 when
    /// there is none with that id.
    pub fn thread(&mut self, tid: i32) -> Result<Thread, String> {
        self.load()?;
        let loaded = self.loaded.as_ref().expect("loaded above");
        let Some(&(pid, comm)) = loaded.profile.threads.get(&tid) else {
            return Ok(Thread { pid: -1, tid: -1, comm: std::ptr::null() });
        };
        let names = &loaded.profile.names;
        let comm = Strings::get(&mut self.strings.comms, comm, || names.comm(comm).to_string());
        Ok(Thread { pid, tid, comm })
    }

    /// Every binary the recording gives a build id, with it (20 bytes, zero-padded), by path;
    /// the list ends with a null filename. Null when it gives none.
    pub fn all_build_ids(&mut self) -> Result<*const BuildIdPair, String> {
        let mut ids: Vec<(String, Vec<u8>)> =
            self.facts()?.build_ids.iter().map(|(p, b)| (p.clone(), b.clone())).collect();
        ids.sort();
        let a = &mut self.answers;
        a.build_ids = ids
            .iter()
            .map(|(_, b)| {
                let mut padded = [0u8; 20];
                let n = b.len().min(20);
                padded[..n].copy_from_slice(&b[..n]);
                padded
            })
            .collect();
        a.build_id_names = ids.into_iter().map(|(p, _)| c_string(p)).collect();
        a.build_id_pairs = a
            .build_ids
            .iter()
            .zip(&a.build_id_names)
            .map(|(id, name)| BuildIdPair { build_id: id.as_ptr(), filename: name.as_ptr() })
            .collect();
        if a.build_id_pairs.is_empty() {
            return Ok(std::ptr::null());
        }
        a.build_id_pairs.push(BuildIdPair { build_id: std::ptr::null(), filename: std::ptr::null() });
        Ok(a.build_id_pairs.as_ptr())
    }

    /// The functions of the binary the recording names `path` (found as reports find it, else
    /// as the recording stores them), by address; the list ends with a null name. Null when
    /// neither is found.
    pub fn symbols_for_path(&mut self, path: &str) -> Result<*const Symbol, String> {
        let found = report::binary_symbols(&self.opts, path).map_err(|e| e.to_string())?;
        let a = &mut self.answers;
        a.symbols.clear();
        a.symbol_names.clear();
        let Some(found) = found.filter(|f| !f.is_empty()) else { return Ok(std::ptr::null()) };
        a.symbols_path = c_string(path.to_string());
        a.symbol_names = found.iter().map(|s| c_string(s.name.clone())).collect();
        a.symbols = found
            .iter()
            .zip(&a.symbol_names)
            .map(|(s, name)| Symbol {
                dso_name: a.symbols_path.as_ptr(),
                vaddr_in_file: s.addr,
                symbol_name: name.as_ptr(),
                symbol_addr: s.addr,
                symbol_len: s.len,
                mapping: std::ptr::null(),
            })
            .collect();
        a.symbols.push(Symbol::default());
        Ok(a.symbols.as_ptr())
    }
}
