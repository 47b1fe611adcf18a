//! Tests of the profile builder: off-CPU weights, sections, stack and thread filters.

use super::*;
use crate::options::{Needs, ReportOptions};

const ROWS: Needs = Needs { samples: true, lines: false, places: false, callers: true };

fn events() -> Vec<EventDesc> {
    vec![
        EventDesc { name: "cpu-clock".into(), type_: 1, config: 0 },
        EventDesc { name: "sched:sched_switch".into(), type_: 2, config: 300 },
        EventDesc { name: "dummy".into(), type_: 1, config: 9 },
    ]
}

fn finish(b: ProfileBuilder, model: Model) -> Profile {
    let n = b.stacks.iter().flatten().max().map_or(0, |m| *m as usize + 1);
    b.finish(
        model,
        |m| {
            let dso = m.dso("/bin/x", None, DsoKind::File);
            let funcs =
                (0..n).map(|i| Func { dso, name: format!("f{i}"), inlined: false, system: None }).collect();
            (Symbolized::identity(n), funcs, Vec::new(), Vec::new())
        },
        Info::default(),
        Vec::new(),
    )
    .0
}

#[test]
fn off_cpu_samples_are_weighed_by_the_time_until_the_thread_runs_again() {
    let opts = ReportOptions::default();
    let mut model = Model::default();
    let comm = model.intern("t");
    let thread = Thread { comm, pid: 1, tid: 1 };
    let mut b = ProfileBuilder::new(&events(), true, &opts.profile_config(), ROWS).unwrap();
    let sample = |attr, time, addrs: &'static [AddrId]| Sample {
        attr,
        time,
        thread,
        cpu: 0,
        period: 1000,
        addrs,
        truncated: false,
        broken_chain: false,
        places: &[],
        raw: None,
        counted: &[],
        group: &[],
    };
    // On the CPU a sample weighs its period; a switch-out, the time until the thread's next
    // sample...
    b.add_sample(&model, &sample(0, 10_000, &[0]));
    b.add_sample(&model, &sample(1, 11_000, &[1]));
    b.add_sample(&model, &sample(0, 51_000, &[0]));
    // ... or until it is switched in again (or exits).
    let woken = Thread { comm, pid: 3, tid: 3 };
    b.add_sample(&model, &Sample { thread: woken, ..sample(1, 30_000, &[1]) });
    b.switched_in(&model, 3, 30_500);
    b.switched_in(&model, 3, 31_000);
    // A thread's last switch-out, with nothing after it, has no known length: left out.
    let idle = Thread { comm, pid: 2, tid: 2 };
    b.add_sample(&model, &Sample { thread: idle, ..sample(1, 20_000, &[1]) });
    let p = finish(b, model);
    assert_eq!(p.sections.len(), 1);
    let s = &p.sections[0];
    assert_eq!((s.samples, s.weight), (4, 42_500));
    let off: u64 = s.stacks.iter().filter(|c| c.off_cpu).map(|c| c.weight).sum();
    assert_eq!(off, 40_500);
    assert_eq!(s.rows.iter().map(|r| r.weight).sum::<u64>(), 42_500);
    // The marker leads off-CPU stacks when asked for.
    let c = s.stacks.iter().find(|c| c.off_cpu).unwrap();
    assert_eq!(p.frames(c.stack, true, true).next(), p.off_cpu_marker);
}

#[test]
fn other_recordings_keep_one_section_per_event() {
    let opts = ReportOptions::default();
    let b = ProfileBuilder::new(&events(), false, &opts.profile_config(), Needs::default()).unwrap();
    let p = finish(b, Model::default());
    assert_eq!(p.sections.len(), 3);
    assert!(p.sections.iter().all(|s| s.unit == Unit::Events));
    let opts = ReportOptions { trace_offcpu: Some(OffCpuMode::OffCpu), ..Default::default() };
    assert!(ProfileBuilder::new(&events(), false, &opts.profile_config(), Needs::default()).is_err());
}

#[test]
fn max_stack_and_thread_filters_apply_once() {
    let mut opts = ReportOptions { max_stack: 2, ..Default::default() };
    opts.filters.tids = vec![2];
    let mut model = Model::default();
    let comm = model.intern("t");
    let mut b = ProfileBuilder::new(&events()[..1], false, &opts.profile_config(), ROWS).unwrap();
    for tid in [1, 2, 2] {
        let thread = Thread { comm, pid: 1, tid };
        b.add_sample(&model, &Sample { time: 5, thread, period: 7, addrs: &[0, 1, 2], ..Default::default() });
    }
    let p = finish(b, model);
    let s = &p.sections[0];
    assert_eq!((s.samples, s.weight, s.rows.len()), (2, 14, 2));
    assert_eq!(p.stacks[s.stacks[0].stack as usize], vec![0, 1]);
}
