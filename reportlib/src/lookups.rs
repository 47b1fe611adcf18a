//! What callers look up besides the sample at hand's frames: its counters and process, the
//! recording's threads and build ids, and a binary's whole symbol table. Each answer stays
//! valid until the next call of the same function (strings until the handle is destroyed).

use std::ffi::c_char;

use crate::ctypes::{BuildIdPair, DsoAddress, EventCounter, EventCountersView, Symbol, Thread};
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

    /// A thread the recording described, as it was at the end of the recording (while its ETM
    /// trace is decoded, as the records so far say); pid -1 when there is none with that id.
    pub fn thread(&mut self, tid: i32) -> Result<Thread, String> {
        if let Some(state) = &self.etm_state {
            let state = state.lock().unwrap_or_else(|e| e.into_inner());
            let Some((pid, comm)) = state.threads.thread(tid) else {
                return Ok(Thread { pid: -1, tid: -1, comm: std::ptr::null() });
            };
            self.answers.thread_comm = c_string(comm.to_string());
            return Ok(Thread { pid, tid, comm: self.answers.thread_comm.as_ptr() });
        }
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

    /// The ETM trace to decode before the samples, once, when a callback wants it and the
    /// recording has it.
    pub fn etm_job(&mut self) -> Result<Option<crate::etm::EtmJob>, String> {
        let Some(callback) = self.etm_callback else { return Ok(None) };
        if std::mem::replace(&mut self.etm_started, true) {
            return Ok(None);
        }
        let Some(recording) = rperf_etm::EtmRecording::open(&self.opts.input)? else { return Ok(None) };
        let state = std::sync::Arc::new(std::sync::Mutex::new(rperf_etm::State::default()));
        self.etm_state = Some(state.clone());
        let build_ids = self.facts()?.build_ids.clone();
        let binaries = || {
            let mut finder = rperf_symbols::BinaryFinder::new(&self.opts.symfs);
            finder.add_symdirs(&self.opts.symdirs);
            rperf_etm::Binaries::new(finder, build_ids.clone())
        };
        // Two sets: decoding reads code from its own while the callback's lookups
        // (`ConvertETMAddressToVaddrInFile`) use the handle's, which decoding never holds.
        self.etm_binaries = Some(binaries());
        Ok(Some(crate::etm::EtmJob { recording, state, callback, binaries: binaries() }))
    }

    /// `addr` in trace `id`'s context: the binary recorded there and the address in it.
    pub fn etm_address(&mut self, id: u8, addr: u64) -> Result<DsoAddress, String> {
        let Some(state) = &self.etm_state else {
            return Err("no ETM trace was decoded: call SetETMCallback, then GetNextSample".into());
        };
        let found = state.lock().unwrap_or_else(|e| e.into_inner()).locate(id, addr);
        let (Some((mapping, offset)), Some(binaries)) = (found, self.etm_binaries.as_mut()) else {
            return Ok(DsoAddress { path: std::ptr::null(), offset: addr });
        };
        let vaddr = binaries.vaddr_in_file(&mapping, offset);
        self.answers.etm_path = c_string(mapping.path);
        Ok(DsoAddress { path: self.answers.etm_path.as_ptr(), offset: vaddr })
    }
}
