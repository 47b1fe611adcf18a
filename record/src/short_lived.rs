//! Processes that began and ended within one pass over the ring buffers without a sample:
//! their FORK, COMM, MMAP and EXIT records say nothing any profile shows, and where processes
//! come and go fast (a build, a shell loop, a busy server forking helpers) they are most of a
//! recording's bytes, and most of what writing it costs. The recorder leaves them out
//! (`--all-task-events` keeps them).
//!
//! A process's samples lie in a CPU's ring buffer by the time its exit ends, which the kernel
//! stamps its EXIT record just before (the samples of the rest of the exit follow the record,
//! by tens of microseconds, at most a millisecond here). A pass reads the clock as it begins,
//! then drains the side-band ring, then the CPUs' rings: a process whose EXIT record was
//! stamped `SETTLED_NS` or more before the pass began has had all its samples drained, in
//! this pass or the one before. A process is kept when it has any, when its exit is more
//! recent, when one of its children is kept (a child forked without an exec finds its
//! mappings through its parent's), when it made threads, or when its pid was used twice in
//! the pass.

use rustc_hash::{FxHashMap, FxHashSet};

use rperf_perfdata::bytes::u32_at;

use crate::sys::record_type;

/// How long before a pass began a process's EXIT record must be stamped for its exit to have
/// ended: 20 ms.
const SETTLED_NS: u64 = 20_000_000;

/// A process forked in this pass.
struct Life {
    pid: u32,
    parent: u32,
    /// When its EXIT record was stamped, if it came in this pass.
    exited: Option<u64>,
    /// Kept whatever else is known: threaded, or its pid used again.
    keep: bool,
}

/// Follows the processes forked in each pass over the rings (`fork`, `exit`, `sampled`), and
/// says at the pass's end which to leave out (`end_pass`).
#[derive(Default)]
pub(crate) struct ShortLived {
    born: Vec<Life>,
    /// The index in `born` of each pid.
    at: FxHashMap<u32, usize>,
    /// Processes with samples in this pass, and in the one before (whose samples may have
    /// been drained before the FORK record that began them).
    sampled: FxHashSet<u32>,
    sampled_before: FxHashSet<u32>,
    /// Whether each process of `born` is kept, and the processes left out: the last pass's,
    /// their room kept for the next.
    kept: Vec<bool>,
    out: FxHashSet<u32>,
    /// The processes left out so far.
    pub(crate) left_out: u64,
}

impl ShortLived {
    /// A FORK record: process `pid` forked by `ppid`, or, when they are equal, a thread
    /// created in process `pid`.
    pub(crate) fn fork(&mut self, pid: u32, ppid: u32) {
        // A process born in this pass that makes a thread, or whose pid comes again, is kept.
        if let Some(&i) = self.at.get(&pid) {
            self.born[i].keep = true;
        } else if pid != ppid {
            self.at.insert(pid, self.born.len());
            self.born.push(Life { pid, parent: ppid, exited: None, keep: false });
        }
    }

    /// An EXIT record of process `pid`'s main thread, stamped `time`.
    pub(crate) fn exit(&mut self, pid: u32, time: Option<u64>) {
        if let Some(&i) = self.at.get(&pid) {
            self.born[i].exited = time;
            self.born[i].keep |= time.is_none();
        }
    }

    /// A sample of process `pid`.
    pub(crate) fn sampled(&mut self, pid: u32) {
        self.sampled.insert(pid);
    }

    /// At the end of a pass that began at `began` on the clock records are stamped with (None
    /// when they are stamped with another), once every ring is drained: the processes whose
    /// records are to be left out. Forgets the pass.
    pub(crate) fn end_pass(&mut self, began: Option<u64>) -> &FxHashSet<u32> {
        let ended = |l: &Life| {
            l.exited.zip(began).is_some_and(|(exit, began)| exit.saturating_add(SETTLED_NS) <= began)
        };
        let (sampled, before) = (&self.sampled, &self.sampled_before);
        self.kept.clear();
        self.kept.extend(
            self.born
                .iter()
                .map(|l| l.keep || !ended(l) || sampled.contains(&l.pid) || before.contains(&l.pid)),
        );
        // A kept process keeps its forebears born in this pass.
        for i in 0..self.born.len() {
            if !self.kept[i] {
                continue;
            }
            let mut parent = self.born[i].parent;
            while let Some(&p) = self.at.get(&parent) {
                if self.kept[p] {
                    break;
                }
                self.kept[p] = true;
                parent = self.born[p].parent;
            }
        }
        self.out.clear();
        self.out.extend(self.born.iter().zip(&self.kept).filter(|(_, k)| !**k).map(|(l, _)| l.pid));
        self.left_out += self.out.len() as u64;
        self.born.clear();
        self.at.clear();
        std::mem::swap(&mut self.sampled_before, &mut self.sampled);
        self.sampled.clear();
        &self.out
    }
}

/// Whether `record` is one of a process's task records (FORK, COMM, MMAP, MMAP2, EXIT) of a
/// process in `left_out`.
pub(crate) fn is_left_out(record: &[u8], left_out: &FxHashSet<u32>) -> bool {
    let task = matches!(
        u32_at(record, 0),
        Some(
            record_type::FORK
                | record_type::EXIT
                | record_type::COMM
                | record_type::MMAP
                | record_type::MMAP2
        )
    );
    task && u32_at(record, 8).is_some_and(|pid| left_out.contains(&pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When the passes of these tests begin: every exit they give has ended by then.
    const BEGAN: Option<u64> = Some(1_000_000_000);

    fn left_out(s: &mut ShortLived) -> Vec<u32> {
        let mut v: Vec<u32> = s.end_pass(BEGAN).iter().copied().collect();
        v.sort();
        v
    }

    /// An EXIT record stamped early enough.
    fn exit(s: &mut ShortLived, pid: u32) {
        s.exit(pid, Some(1_000));
    }

    #[test]
    fn processes_born_and_ended_unsampled_in_a_pass_are_left_out() {
        let mut s = ShortLived::default();
        // 10 forks 11 (sampled), 12 (exits unsampled), 13 (lives on), 14 (made a thread);
        // 12 forked 15, which lives on; 16 forked 17, both ended unsampled.
        for (pid, ppid) in [(11, 10), (12, 10), (13, 10), (14, 10), (15, 12), (16, 10), (17, 16)] {
            s.fork(pid, ppid);
        }
        s.fork(14, 14);
        for pid in [11, 12, 14, 16, 17] {
            exit(&mut s, pid);
        }
        s.sampled(11);
        assert_eq!(left_out(&mut s), [16, 17]);
        assert_eq!(s.left_out, 2);
        // A process sampled in the pass before its FORK record came is kept; one exiting in
        // a later pass than its FORK is kept.
        s.fork(20, 10);
        s.fork(21, 10);
        exit(&mut s, 20);
        exit(&mut s, 21);
        exit(&mut s, 13);
        assert_eq!(left_out(&mut s), [20, 21]);
        s.sampled(31);
        assert_eq!(left_out(&mut s), Vec::<u32>::new());
        s.fork(31, 10);
        exit(&mut s, 31);
        s.fork(32, 10);
        exit(&mut s, 32);
        assert_eq!(left_out(&mut s), [32]);
        // A pid used twice in a pass is kept.
        s.fork(40, 10);
        exit(&mut s, 40);
        s.fork(40, 10);
        exit(&mut s, 40);
        assert_eq!(left_out(&mut s), Vec::<u32>::new());
    }

    #[test]
    fn a_process_whose_exit_may_not_have_ended_is_kept() {
        let mut s = ShortLived::default();
        let began = BEGAN.unwrap();
        // Stamped less than SETTLED_NS before the pass began; at its edge; unstamped.
        for (pid, time) in [(60, Some(began - SETTLED_NS + 1)), (61, Some(began - SETTLED_NS)), (62, None)] {
            s.fork(pid, 10);
            s.exit(pid, time);
        }
        assert_eq!(left_out(&mut s), [61]);
        // Records stamped with another clock than the pass's.
        s.fork(63, 10);
        exit(&mut s, 63);
        assert!(s.end_pass(None).is_empty());
    }

    #[test]
    fn forebears_of_a_kept_process_are_kept_in_any_order_of_their_forks() {
        let mut s = ShortLived::default();
        // A grandchild's FORK drained before its parent's (another CPU's side-band ring).
        s.fork(52, 51);
        s.fork(51, 50);
        s.fork(53, 50);
        for pid in [51, 52, 53] {
            exit(&mut s, pid);
        }
        s.sampled(52);
        assert_eq!(left_out(&mut s), [53]);
    }

    #[test]
    fn only_task_records_of_left_out_processes_are_left_out() {
        let set: FxHashSet<u32> = [7u32].into_iter().collect();
        let record = |type_: u32, pid: u32| {
            let mut r = type_.to_le_bytes().to_vec();
            r.extend_from_slice(&[0, 0, 24, 0]);
            r.extend_from_slice(&pid.to_le_bytes());
            r.extend_from_slice(&pid.to_le_bytes());
            r.extend_from_slice(&[0; 8]);
            r
        };
        for t in
            [record_type::FORK, record_type::EXIT, record_type::COMM, record_type::MMAP, record_type::MMAP2]
        {
            assert!(is_left_out(&record(t, 7), &set));
            assert!(!is_left_out(&record(t, 8), &set));
        }
        assert!(!is_left_out(&record(record_type::SAMPLE, 7), &set));
        assert!(!is_left_out(&record(record_type::LOST, 7), &set));
    }
}
