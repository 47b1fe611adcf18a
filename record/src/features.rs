//! The feature sections written at the end of a recording: the machine, the command line,
//! build ids, the vDSO, JIT maps and dumps, and the kallsyms lines that name the recorded
//! kernel addresses.

use std::os::unix::ffi::OsStrExt;

use rperf_perfdata::encode::{self, BuildIdEntry};
use rperf_perfdata::feature;
use rperf_symbols::buildid;

use crate::session::Session;
use crate::sys;

impl Session {
    pub(crate) fn features(&mut self, note: &mut dyn FnMut(&str)) -> Vec<(u32, Vec<u8>)> {
        let uts = uname();
        let mut f = vec![
            (feature::HOSTNAME, encode::string_feature(&uts.0)),
            (feature::OSRELEASE, encode::string_feature(&uts.1)),
            (feature::VERSION, encode::string_feature(concat!("rperf ", env!("CARGO_PKG_VERSION")))),
            (feature::ARCH, encode::string_feature(&uts.2)),
            (feature::CMDLINE, encode::cmdline_feature(&self.opts.cmdline)),
        ];
        let online = sys::online_cpus().len() as u32;
        let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|s| sys::parse_cpu_list(s.trim()).ok())
            .map_or(online, |v| v.len() as u32);
        f.push((feature::NRCPUS, encode::nrcpus_feature(possible, online)));
        if let Some(model) = cpu_model() {
            f.push((feature::CPUDESC, encode::string_feature(&model)));
        }
        if let Some(kb) = total_mem_kb() {
            f.push((feature::TOTAL_MEM, kb.to_le_bytes().to_vec()));
        }
        let tracepoints: Vec<String> =
            self.events.iter().filter(|e| e.spec.is_tracepoint()).map(|e| e.spec.name.clone()).collect();
        if !tracepoints.is_empty() {
            if let Some(data) = crate::tracing::tracing_data(&tracepoints) {
                f.push((feature::TRACING_DATA, data));
            }
        }
        if let Some((first, last)) = self.sink.writer.sample_times() {
            f.push((feature::SAMPLE_TIME, encode::sample_time_feature(first, last)));
        }
        // Where the kernel stamped samples with the clock asked for (not perf's own clock).
        let clocked = self.events.iter().all(|e| e.attr.use_clockid() != 0);
        if let (true, Some(resolution)) = (clocked, sys::clock_resolution_ns(self.opts.clockid)) {
            let (wall, clock) = self.clock_reference;
            f.push((feature::CLOCKID, encode::clockid_feature(resolution)));
            f.push((feature::CLOCK_DATA, encode::clock_data_feature(self.opts.clockid as u32, wall, clock)));
        }
        let info = rperf_perfdata::RecordingInfo {
            trace_offcpu: self.opts.trace_offcpu,
            recorded_ns: self.elapsed.map(|_| self.recorded.as_nanos() as u64),
            elapsed_ns: self.elapsed.map(|e| e.as_nanos() as u64),
            jit_reads: self.sink.jit.seen.then_some(self.sink.jit.reads),
            processes_left_out: self.sink.short_lived.as_ref().map(|s| s.left_out),
        };
        f.push((feature::RPERF_INFO, info.encode()));
        f.extend(self.build_ids());
        match self.kernel.finish(&self.sink.kernel_hits, &mut self.sink.writer) {
            Ok(Some(snap)) => f.push((feature::RPERF_KALLSYMS, snap.into_bytes())),
            Ok(None) => {}
            Err(e) => {
                let why = format!("the kernel's map keeps a provisional length: {e}");
                note(&why);
                self.notes.push(why);
            }
        }
        f
    }

    /// The build-id list (the kernel's, every binary's, the vDSO's) and the vDSO's image.
    fn build_ids(&self) -> Vec<(u32, Vec<u8>)> {
        let mut f = Vec::new();
        let mut ids = Vec::new();
        if let Some(kid) = buildid::of_kernel() {
            ids.push(BuildIdEntry { pid: -1, kernel: true, build_id: kid, path: "[kernel.kallsyms]".into() });
        }
        let mut dsos: Vec<_> = self.sink.dsos.iter().collect();
        dsos.sort_unstable_by_key(|(name, _)| &name[..]);
        for (name, dso) in dsos {
            let path = String::from_utf8_lossy(name);
            if let Some(bid) = dso
                .build_id
                .clone()
                .or_else(|| buildid::of_file(std::path::Path::new(std::ffi::OsStr::from_bytes(name))))
            {
                ids.push(BuildIdEntry { pid: -1, kernel: false, build_id: bid, path: path.into_owned() });
            }
        }
        // The vDSO exists only in memory; keep its image so that its frames can be named later.
        let vdso = rperf_symbols::running_vdso();
        if let Some(bid) = vdso.as_deref().and_then(buildid::of_image) {
            ids.push(BuildIdEntry { pid: -1, kernel: false, build_id: bid, path: "[vdso]".into() });
        }
        f.push((feature::BUILD_ID, encode::build_id_feature(&ids)));
        if let Some(image) = vdso {
            f.push((feature::RPERF_VDSO, image));
        }
        f
    }
}

fn uname() -> (String, String, String) {
    // SAFETY: uname fills a local utsname struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    unsafe { libc::uname(&mut u) };
    let s = |f: &[libc::c_char]| {
        // SAFETY: utsname fields are NUL-terminated within their arrays.
        unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.machine))
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn total_mem_kb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()
}
