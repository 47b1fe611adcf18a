//! Feature section ids: perf's (`HEADER_*` in perf's header.h, as linux-perf-data defines them)
//! and rperf's own (192 and up, which perf and other readers skip as numbers they do not know).

#![allow(missing_docs)] // perf's header.h names and documents these.
use linux_perf_data::Feature;

pub const TRACING_DATA: u32 = Feature::TRACING_DATA.0;
pub const BUILD_ID: u32 = Feature::BUILD_ID.0;
pub const HOSTNAME: u32 = Feature::HOSTNAME.0;
pub const OSRELEASE: u32 = Feature::OSRELEASE.0;
pub const VERSION: u32 = Feature::VERSION.0;
pub const ARCH: u32 = Feature::ARCH.0;
pub const NRCPUS: u32 = Feature::NRCPUS.0;
pub const CPUDESC: u32 = Feature::CPUDESC.0;
pub const CPUID: u32 = Feature::CPUID.0;
pub const TOTAL_MEM: u32 = Feature::TOTAL_MEM.0;
pub const CMDLINE: u32 = Feature::CMDLINE.0;
pub const EVENT_DESC: u32 = Feature::EVENT_DESC.0;
pub const PMU_MAPPINGS: u32 = Feature::PMU_MAPPINGS.0;
pub const SAMPLE_TIME: u32 = Feature::SAMPLE_TIME.0;
pub const CLOCKID: u32 = Feature::CLOCKID.0;
pub const CLOCK_DATA: u32 = Feature::CLOCK_DATA.0;

/// The kallsyms lines needed to symbolize the recorded kernel addresses (kallsyms text).
pub const RPERF_KALLSYMS: u32 = 192;
/// The JIT symbol maps (`/tmp/perf-PID.map`) of the recorded processes
/// (`sections::encode_perf_maps`).
pub const RPERF_PERF_MAPS: u32 = 193;
/// The jitdump files (`jit-PID.dump`) the recorded runtimes wrote (`sections::encode_jitdumps`).
pub const RPERF_JITDUMPS: u32 = 194;
/// The vDSO image the recorded processes ran with (the ELF image's bytes).
pub const RPERF_VDSO: u32 = 195;
/// How the recording was made (`sections::RecordingInfo`): what a reader must know to weigh
/// its samples, such as an off-CPU recording.
pub const RPERF_INFO: u32 = 196;
/// The symbol files runtimes registered through the GDB JIT interface
/// (`sections::encode_jit_symfiles`).
pub const RPERF_JIT_SYMFILES: u32 = 197;

/// The name of one of rperf's own feature sections.
pub fn rperf_name(feature: u32) -> Option<&'static str> {
    match feature {
        RPERF_KALLSYMS => Some("kallsyms snapshot"),
        RPERF_PERF_MAPS => Some("JIT symbol maps"),
        RPERF_JITDUMPS => Some("jitdumps"),
        RPERF_VDSO => Some("vDSO image"),
        RPERF_INFO => Some("recording info"),
        RPERF_JIT_SYMFILES => Some("JIT symbol files"),
        _ => None,
    }
}

/// The feature a name of simpleperf's report library names (`GetFeatureSection`): perf's
/// sections by their lower-case header.h names, and simpleperf's own (`meta_info`, `file`).
pub fn by_simpleperf_name(name: &str) -> Option<u32> {
    const NAMES: [&str; 31] = [
        "tracing_data",
        "build_id",
        "hostname",
        "osrelease",
        "version",
        "arch",
        "nrcpus",
        "cpudesc",
        "cpuid",
        "total_mem",
        "cmdline",
        "event_desc",
        "cpu_topology",
        "numa_topology",
        "branch_stack",
        "pmu_mappings",
        "group_desc",
        "auxtrace",
        "stat",
        "cache",
        "sample_time",
        "mem_topology",
        "clockid",
        "dir_format",
        "bpf_prog_info",
        "bpf_btf",
        "compressed",
        "cpu_pmu_caps",
        "clock_data",
        "hybrid_topology",
        "pmu_caps",
    ];
    const SIMPLEPERF: [&str; 7] =
        ["file", "meta_info", "debug_unwind", "debug_unwind_file", "file2", "etm_branch_list", "init_map"];
    if let Some(i) = NAMES.iter().position(|n| *n == name) {
        return Some(i as u32 + 1);
    }
    SIMPLEPERF.iter().position(|n| *n == name).map(|i| i as u32 + 128)
}
