//! The exported functions. Each function checks its arguments, runs under `guard` (an error or a panic becomes a
//! message on stderr and the error return) and hands the work to the session.

use std::ffi::{c_char, c_int, CStr};
use std::path::PathBuf;

pub use crate::ctypes::*;
use crate::frames::Session;

/// The handle callers hold.
pub struct ReportLib {
    session: Session,
}

/// Runs `f` on the handle; an error or a panic is reported on stderr as `what` failing, and
/// gives `failed`.
fn guard<T>(
    lib: *mut ReportLib,
    what: &str,
    failed: T,
    f: impl FnOnce(&mut Session) -> Result<T, String>,
) -> T {
    if lib.is_null() {
        eprintln!("rperf report library: {what}: the handle is null (CreateReportLib gives one)");
        return failed;
    }
    // SAFETY: a non-null handle comes from CreateReportLib and is used by one thread at a
    // time, as simpleperf's library requires of its callers.
    let session = unsafe { &mut (*lib).session };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(session))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            eprintln!("rperf report library: {what}: {e}");
            failed
        }
        Err(_) => {
            eprintln!("rperf report library: {what}: internal error (see the message above); the call had no effect");
            failed
        }
    }
}

/// A string argument.
fn text<'a>(s: *const c_char, what: &str) -> Result<&'a str, String> {
    if s.is_null() {
        return Err(format!("{what} is null"));
    }
    // SAFETY: callers pass NUL-terminated strings, as the interface requires.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map_err(|_| format!("{what} is not UTF-8: {:?}", s))
}

/// A list argument: `n` strings.
fn texts<'a>(list: *const *const c_char, n: c_int, what: &str) -> Result<Vec<&'a str>, String> {
    if n < 0 || (n > 0 && list.is_null()) {
        return Err(format!("{what}: a list of {n} strings at {list:?}"));
    }
    // SAFETY: `list` holds `n` string pointers, as the interface requires.
    let items = unsafe { std::slice::from_raw_parts(list, n as usize) };
    items.iter().map(|&s| text(s, what)).collect()
}

#[no_mangle]
pub extern "C" fn CreateReportLib() -> *mut ReportLib {
    std::panic::catch_unwind(|| Box::into_raw(Box::new(ReportLib { session: Session::default() })))
        .unwrap_or(std::ptr::null_mut())
}

/// Frees a handle and everything it handed out.
///
/// # Safety
/// `lib` is null or a handle from `CreateReportLib` not yet destroyed, and is not used again.
#[no_mangle]
pub unsafe extern "C" fn DestroyReportLib(lib: *mut ReportLib) {
    if !lib.is_null() {
        // SAFETY: as the caller promises.
        drop(unsafe { Box::from_raw(lib) });
    }
}

#[no_mangle]
pub extern "C" fn SetLogSeverity(lib: *mut ReportLib, level: *const c_char) -> bool {
    guard(lib, "SetLogSeverity", false, |_| {
        let level = text(level, "the log level")?;
        match level {
            "verbose" | "debug" | "info" | "warning" | "error" | "fatal" => Ok(true),
            l => Err(format!(
                "unknown log level `{}`: use verbose, debug, info, warning, error or fatal",
                l.escape_debug()
            )),
        }
    })
}

#[no_mangle]
pub extern "C" fn SetSymfs(lib: *mut ReportLib, dir: *const c_char) -> bool {
    guard(lib, "SetSymfs", false, |s| {
        s.settable("SetSymfs")?;
        let dir = PathBuf::from(text(dir, "the symfs folder")?);
        if !dir.is_dir() {
            return Err(format!("{} is not a folder", dir.display()));
        }
        s.opts.symfs = vec![dir];
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn SetRecordFile(lib: *mut ReportLib, file: *const c_char) -> bool {
    guard(lib, "SetRecordFile", false, |s| {
        s.set_record_file(PathBuf::from(text(file, "the record file")?))?;
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn SetKallsymsFile(lib: *mut ReportLib, file: *const c_char) -> bool {
    guard(lib, "SetKallsymsFile", false, |s| {
        s.settable("SetKallsymsFile")?;
        let file = PathBuf::from(text(file, "the kallsyms file")?);
        std::fs::metadata(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        s.opts.kallsyms = Some(file);
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn ShowIpForUnknownSymbol(lib: *mut ReportLib) {
    guard(lib, "ShowIpForUnknownSymbol", (), |s| {
        s.settable("ShowIpForUnknownSymbol")?;
        s.show_ip = true;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn ShowArtFrames(lib: *mut ReportLib, show: c_int) {
    guard(lib, "ShowArtFrames", (), |s| {
        s.settable("ShowArtFrames")?;
        s.opts.show_art_frames = show != 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn MergeJavaMethods(lib: *mut ReportLib, merge: c_int) {
    guard(lib, "MergeJavaMethods", (), |s| {
        s.settable("MergeJavaMethods")?;
        s.merge_java = merge != 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn AddProguardMappingFile(lib: *mut ReportLib, file: *const c_char) -> bool {
    guard(lib, "AddProguardMappingFile", false, |s| {
        s.settable("AddProguardMappingFile")?;
        let file = PathBuf::from(text(file, "the mapping file")?);
        report::ProguardMapping::read(&file).map_err(|e| e.to_string())?;
        s.opts.proguard_mappings.push(file);
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn GetSupportedTraceOffCpuModes(lib: *mut ReportLib) -> *const c_char {
    guard(lib, "GetSupportedTraceOffCpuModes", std::ptr::null(), |s| s.off_cpu_modes())
}

#[no_mangle]
pub extern "C" fn SetTraceOffCpuMode(lib: *mut ReportLib, mode: *const c_char) -> bool {
    guard(lib, "SetTraceOffCpuMode", false, |s| {
        s.set_off_cpu_mode(text(mode, "the mode")?)?;
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn SetSampleFilter(lib: *mut ReportLib, filters: *const *const c_char, n: c_int) -> bool {
    guard(lib, "SetSampleFilter", false, |s| {
        s.settable("SetSampleFilter")?;
        let args = texts(filters, n, "the filter options")?;
        let mut f = s.opts.filters.clone();
        let mut i = 0;
        while i < args.len() {
            let value = args.get(i + 1).ok_or_else(|| format!("{} needs a value", args[i].escape_debug()))?;
            f.add_simpleperf_option(args[i], value)?;
            i += 2;
        }
        s.opts.filters = f;
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn AggregateThreads(lib: *mut ReportLib, regexes: *const *const c_char, n: c_int) -> bool {
    guard(lib, "AggregateThreads", false, |s| {
        s.settable("AggregateThreads")?;
        let patterns = texts(regexes, n, "the thread name patterns")?;
        let compiled = patterns
            .iter()
            .map(|p| {
                regex::Regex::new(p)
                    .map_err(|e| format!("`{}` is not a regular expression: {e}", p.escape_debug()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        s.opts.aggregate_threads = compiled;
        Ok(true)
    })
}

#[no_mangle]
pub extern "C" fn GetNextSample(lib: *mut ReportLib) -> *const Sample {
    // A recording's ETM trace is decoded first, holding no borrow of the handle: the callback
    // may call the library back.
    if let Some(job) = guard(lib, "GetNextSample", None, |s| s.etm_job()) {
        job.run();
    }
    guard(lib, "GetNextSample", std::ptr::null(), |s| s.next_sample())
}

#[no_mangle]
pub extern "C" fn GetEventOfCurrentSample(lib: *mut ReportLib) -> *const Event {
    guard(lib, "GetEventOfCurrentSample", std::ptr::null(), |s| s.event())
}

#[no_mangle]
pub extern "C" fn GetSymbolOfCurrentSample(lib: *mut ReportLib) -> *const Symbol {
    guard(lib, "GetSymbolOfCurrentSample", std::ptr::null(), |s| s.symbol())
}

#[no_mangle]
pub extern "C" fn GetCallChainOfCurrentSample(lib: *mut ReportLib) -> *const CallChain {
    guard(lib, "GetCallChainOfCurrentSample", std::ptr::null(), |s| s.callchain())
}

#[no_mangle]
pub extern "C" fn GetTracingDataOfCurrentSample(lib: *mut ReportLib) -> *const c_char {
    guard(lib, "GetTracingDataOfCurrentSample", std::ptr::null(), |s| s.tracing_data())
}

#[no_mangle]
pub extern "C" fn GetBuildIdForPath(lib: *mut ReportLib, path: *const c_char) -> *const c_char {
    guard(lib, "GetBuildIdForPath", std::ptr::null(), |s| s.build_id(text(path, "the path")?))
}

#[no_mangle]
pub extern "C" fn GetFeatureSection(lib: *mut ReportLib, name: *const c_char) -> *const FeatureSection {
    guard(lib, "GetFeatureSection", std::ptr::null(), |s| s.feature(text(name, "the feature name")?))
}

#[no_mangle]
pub extern "C" fn RemoveMethod(lib: *mut ReportLib, regex: *const c_char) -> bool {
    guard(lib, "RemoveMethod", false, |s| {
        s.settable("RemoveMethod")?;
        let pattern = text(regex, "the method name pattern")?;
        let r = regex::Regex::new(pattern)
            .map_err(|e| format!("`{}` is not a regular expression: {e}", pattern.escape_debug()))?;
        s.remove_methods.push(r);
        Ok(true)
    })
}

/// Names functions as their binaries store them (`_Z5func2ii`), not demangled.
#[no_mangle]
pub extern "C" fn DisableDemangle(lib: *mut ReportLib) {
    guard(lib, "DisableDemangle", (), |s| {
        s.settable("DisableDemangle")?;
        s.opts.names = report::NameStyle::Mangled;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn GetEventCountersOfCurrentSample(lib: *mut ReportLib) -> *const EventCountersView {
    guard(lib, "GetEventCountersOfCurrentSample", std::ptr::null(), |s| s.event_counters())
}

#[no_mangle]
pub extern "C" fn GetProcessNameOfCurrentSample(lib: *mut ReportLib) -> *const c_char {
    guard(lib, "GetProcessNameOfCurrentSample", std::ptr::null(), |s| s.process_name())
}

#[no_mangle]
pub extern "C" fn GetAllBuildIds(lib: *mut ReportLib) -> *const BuildIdPair {
    guard(lib, "GetAllBuildIds", std::ptr::null(), |s| s.all_build_ids())
}

#[no_mangle]
pub extern "C" fn GetThread(lib: *mut ReportLib, tid: c_int) -> Thread {
    let unknown = || Thread { pid: -1, tid: -1, comm: std::ptr::null() };
    guard(lib, "GetThread", unknown(), |s| s.thread(tid))
}

#[no_mangle]
pub extern "C" fn ReadSymbolsForPath(lib: *mut ReportLib, path: *const c_char) -> *const Symbol {
    guard(lib, "ReadSymbolsForPath", std::ptr::null(), |s| s.symbols_for_path(text(path, "the path")?))
}

/// Hands each element of the recording's ETM trace to `callback`, with its trace ID, as the
/// first `GetNextSample` reads the recording (its samples follow).
#[no_mangle]
pub extern "C" fn SetETMCallback(lib: *mut ReportLib, callback: Option<crate::etm::EtmCallback>) {
    guard(lib, "SetETMCallback", (), |s| {
        s.settable("SetETMCallback")?;
        s.etm_callback = Some(callback.ok_or("the callback is null")?);
        Ok(())
    })
}

/// The binary and its address of `addr` in the context of trace `trace_id`, as decoding
/// stands; no binary (path null, offset `addr`) when none maps it.
#[no_mangle]
pub extern "C" fn ConvertETMAddressToVaddrInFile(lib: *mut ReportLib, trace_id: u8, addr: u64) -> DsoAddress {
    let none = DsoAddress { path: std::ptr::null(), offset: 0 };
    guard(lib, "ConvertETMAddressToVaddrInFile", none, |s| s.etm_address(trace_id, addr))
}
