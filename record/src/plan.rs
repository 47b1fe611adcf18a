//! The plan of a recording: every decision made from the options and this machine before any
//! event is opened: the events (with the fallback to cpu-clock without a PMU), the rate, what
//! each sample carries, the CPUs, ring-buffer sizes within the locked-memory budget, and DWARF
//! stack copies that fit those rings. Opening the plan is the recorder's job.

use crate::attr::{data_pages, event_supported, max_sample_rate};
use crate::buffers::{fit_mlock_budget, sideband_pages_system_wide, SIDEBAND_PAGES};
use crate::event::{parse_event, EventSpec};
use crate::options::{CallGraph, Rate, RecordOptions};
use crate::sys::{self, sample};
use crate::Error;

/// A validated recording plan.
pub(crate) struct Plan {
    /// The options, with the DWARF stack size cut to fit the ring buffers.
    pub opts: RecordOptions,
    /// The events to sample.
    pub specs: Vec<EventSpec>,
    /// The sampling rate.
    pub rate: Option<Rate>,
    /// PERF_SAMPLE_* bits of every sample.
    pub sample_type: u64,
    /// CPUs to open events on.
    pub cpus: Vec<u32>,
    /// Data pages of each sample ring.
    pub data_pages: usize,
    /// Data pages of each side-band ring.
    pub side_pages: usize,
    /// What was adjusted, said once to the user.
    pub notes: Vec<String>,
}

impl Plan {
    /// Checks `opts` against this machine; `note` hears each adjustment as it is made.
    pub fn new(opts: &RecordOptions, note: &mut dyn FnMut(&str)) -> Result<Plan, Error> {
        let mut notes = Vec::new();
        let mut say = |s: String| {
            note(&s);
            notes.push(s);
        };
        let specs = events(opts, &mut say)?;
        let rate = rate(opts, &mut say)?;
        let mut sample_type =
            sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::CPU | sample::PERIOD;
        match opts.call_graph {
            CallGraph::None => {}
            CallGraph::FramePointer => sample_type |= sample::CALLCHAIN,
            CallGraph::Dwarf { .. } => {
                sample_type |= sample::CALLCHAIN | sample::REGS_USER | sample::STACK_USER
            }
        }
        let cpus = cpus(opts)?;
        let wanted = data_pages(opts);
        let side_wanted = if matches!(opts.target, crate::target::Target::SystemWide) {
            sideband_pages_system_wide(cpus.len())
        } else {
            SIDEBAND_PAGES
        };
        let (data_pages, side_pages) = fit_mlock_budget(wanted, cpus.len(), side_wanted);
        if data_pages < wanted {
            say(format!(
                "the locked-memory limit allows only {data_pages} ring-buffer pages per CPU (asked for \
                 {wanted}); raise kernel.perf_event_mlock_kb or `ulimit -l` if samples are lost"
            ));
        }
        // A sample must fit in half the ring buffer, or the kernel drops every one of them.
        let mut opts = opts.clone();
        if let CallGraph::Dwarf { stack_size } = &mut opts.call_graph {
            let fits = ((data_pages * sys::page_size() / 2).saturating_sub(1024) as u32) & !7;
            if *stack_size > fits {
                say(format!(
                    "DWARF stack copies cut from {} to {fits} bytes to fit the {}-page ring buffers",
                    *stack_size, data_pages
                ));
                *stack_size = fits.max(8);
            }
        }
        Ok(Plan { opts, specs, rate, sample_type, cpus, data_pages, side_pages, notes })
    }
}

/// The events to sample: those asked for, each hardware one supported here; by default
/// cpu-cycles, or cpu-clock without a PMU.
fn events(opts: &RecordOptions, say: &mut dyn FnMut(String)) -> Result<Vec<EventSpec>, Error> {
    let mut specs = opts.events.clone();
    if specs.is_empty() {
        let cycles = parse_event("cpu-cycles").expect("built-in event");
        if event_supported(&cycles).is_ok() {
            specs.push(cycles);
        } else {
            specs.push(parse_event("cpu-clock").expect("built-in event"));
            say("cpu-cycles is not supported on this machine (no PMU); sampling cpu-clock instead".into());
        }
    }
    for s in specs.iter().filter(|s| s.is_hardware()) {
        let Err(e) = event_supported(s) else { continue };
        if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV)) {
            return Err(Error::Event {
                name: s.display_name(),
                reason: "not supported on this machine (no PMU access for it, e.g. in a VM)".into(),
                remedy: "sample a software event instead, e.g. -e cpu-clock".into(),
            });
        }
    }
    Ok(specs)
}

/// The sampling rate, within what the kernel allows.
fn rate(opts: &RecordOptions, say: &mut dyn FnMut(String)) -> Result<Option<Rate>, Error> {
    let mut rate = opts.rate;
    if let Some(Rate::Frequency(f)) = rate {
        let max = max_sample_rate();
        if f > max {
            say(format!("-F {f} is above kernel.perf_event_max_sample_rate ({max}); using {max}"));
            rate = Some(Rate::Frequency(max));
        }
        if f == 0 {
            return Err(Error::Usage("-F must be at least 1".into()));
        }
    }
    if let Some(Rate::Period(0)) = rate {
        return Err(Error::Usage("-c must be at least 1".into()));
    }
    Ok(rate)
}

/// The CPUs to open events on: those of `--cpu`, each online, or every online CPU.
fn cpus(opts: &RecordOptions) -> Result<Vec<u32>, Error> {
    let online = sys::online_cpus();
    let Some(list) = &opts.cpus else { return Ok(online) };
    if let Some(bad) = list.iter().find(|c| !online.contains(c)) {
        return Err(Error::Usage(format!(
            "--cpu {bad}: no such online CPU (online: {})",
            online.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        )));
    }
    Ok(list.clone())
}
