//! Where a report's kernel symbols come from: `--kallsyms`, a kernel image (`vmlinux`) in the
//! symbol folders, rperf's snapshot in the recording, simpleperf's stored kernel symbols, or
//! this machine's kernel when the recording was made on it.

use linux_perf_data::SimpleperfFileRecord;
use rperf_symbols::{KernelSymbols, SymbolTable};

use super::KernelSource;
use crate::Error;

/// The kernel image (`vmlinux`) the symbol folders (`--symfs`, `--symdir`) hold for the
/// recording's kernel: by its build id (a binary cache's `build_id_list`), else a `vmlinux`
/// whose build id matches or cannot be compared. None without symbol folders.
pub fn vmlinux(
    finder: &rperf_symbols::BinaryFinder,
    symbol_folders: bool,
    build_ids: &std::collections::HashMap<String, Vec<u8>>,
) -> Option<std::path::PathBuf> {
    if !symbol_folders {
        return None;
    }
    let id = build_ids.get("[kernel.kallsyms]").filter(|b| b.iter().any(|&x| x != 0));
    match finder.find("vmlinux", id.map(Vec::as_slice)) {
        rperf_symbols::Found::File(path) => Some(path),
        _ => None,
    }
}

/// Where kernel symbols come from: `--kallsyms` or a kernel image (the pair given), rperf's snapshot,
/// simpleperf's stored kernel symbols, or this machine's kernel when the recording was made
/// on it (`this_kernel`).
pub fn kernel_source(
    (kallsyms, vmlinux): (Option<&std::path::Path>, Option<&std::path::Path>),
    perf_file: &linux_perf_data::PerfFile,
    stored: &[SimpleperfFileRecord],
    this_kernel: bool,
) -> Result<KernelSource, Error> {
    let ready = |k| Ok(KernelSource::Ready(k));
    if let Some(p) = kallsyms {
        // The user names the file, so any owner will do; it must still be a file of a sane size.
        use rperf_symbols::trusted::{self, Owners, Refusal};
        let text = match trusted::read(p, 256 << 20, Owners::Anyone, true) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(Refusal::Missing) => {
                let source = std::io::Error::from(std::io::ErrorKind::NotFound);
                return Err(Error::Open { path: p.to_path_buf(), source });
            }
            Err(Refusal::Unsafe(why)) => return Err(Error::Kallsyms { path: p.to_path_buf(), why }),
        };
        return Ok(KernelSource::Pending(Box::new(move |addrs| {
            (KernelSymbols::from_kallsyms_for(&text, addrs), None)
        })));
    }
    // A kernel image read fails quietly: the other sources are tried.
    let image = vmlinux.and_then(|p| rperf_symbols::ElfInfo::load(p).ok());
    if let Some(k) = image.as_ref().and_then(KernelSymbols::from_vmlinux) {
        return ready(k);
    }
    let snapshot = linux_perf_data::Feature(rperf_perfdata::feature::RPERF_KALLSYMS);
    if let Some(d) = perf_file.feature_section_data(snapshot) {
        let text = String::from_utf8_lossy(d).into_owned();
        return Ok(KernelSource::Pending(Box::new(move |addrs| {
            (KernelSymbols::from_kallsyms_for(&text, addrs), None)
        })));
    }
    let stored_kernel: Vec<(u64, u64, String)> = stored
        .iter()
        .filter(|r| r.r#type == linux_perf_data::simpleperf_dso_type::DSO_KERNEL)
        .flat_map(|r| r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())))
        .collect();
    if !stored_kernel.is_empty() {
        return ready(KernelSymbols::from_table(SymbolTable::new(stored_kernel)));
    }
    // The running kernel's symbols fit a recording made on this kernel.
    if this_kernel {
        // The kernel formats /proc/kallsyms slowly (~40 ms): its core symbols are kept between
        // reports, read beside the records; only the symbols the recording's kernel addresses
        // need are parsed. The thread runs at the lowest priority, on what the reader and the
        // converter leave of the cores, and naming asks for it last (with a core of its own and
        // the whole text held, first reports took 1.2–1.3 times as long).
        use rperf_symbols::kallsyms_cache::RunningKernel;
        let loading = std::thread::Builder::new().name("rperf-kallsyms".into()).spawn(|| {
            // Linux sets the calling thread's nice value; failing, it only keeps its priority.
            let _ = rustix::process::setpriority_process(None, 19);
            RunningKernel::load()
        });
        let mut reading = loading.ok();
        // Kept for a loader called again (a live report).
        let mut kept: Option<RunningKernel> = None;
        return Ok(KernelSource::Pending(Box::new(move |addrs| {
            let read = || reading.take().and_then(|h| h.join().ok()).unwrap_or_default();
            let mut k = kept.take().unwrap_or_else(read);
            if !k.covers(addrs) {
                k = RunningKernel::live();
            }
            let hidden = k.hidden();
            let symbols = k.symbols_for(addrs);
            kept = Some(k);
            let warning = hidden.then(|| {
                "kernel addresses in /proc/kallsyms are hidden (kptr_restrict); kernel frames stay [unknown]: \
                 run as root or set kernel.kptr_restrict=0"
                    .to_string()
            });
            (symbols, warning)
        })));
    }
    ready(KernelSymbols::default())
}
