//! A round: the records of one pass over the ring buffers, put in time order before they are
//! written, so that readers that do not sort (simpleperf) see a process's mappings before its
//! samples and its exit after them.
//!
//! A record is kept where it already is when it can be: in its ring buffer, whose space the
//! kernel gets back only once the round is written. Records the recorder made or rewrote
//! (an unwound sample, a cut stack copy, one that wrapped around a ring's end) are copied into
//! the round's own bytes.

/// The ring number of a record in the round's own bytes.
const OWN: u32 = u32::MAX;

/// Up to this many runs of records in time order are merged; more are sorted.
const MERGED_RUNS: usize = 8;

/// Where one record of the round lies, and its time.
#[derive(Clone, Copy)]
struct Placed {
    time: u64,
    at: usize,
    len: u32,
    /// The ring buffer it lies in (its number in the slices `write` is given), or `OWN`.
    ring: u32,
}

#[derive(Default)]
pub(crate) struct Round {
    bytes: Vec<u8>,
    index: Vec<Placed>,
    /// Records that lie in ring buffers.
    in_rings: usize,
    /// The time of the latest record, given to records without one.
    latest: u64,
}

impl Round {
    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The bytes copied into the round.
    pub(crate) fn copied_len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether records lie in ring buffers, whose space must not be handed back before they
    /// are written.
    pub(crate) fn holds_ring_records(&self) -> bool {
        self.in_rings > 0
    }

    fn time_for(&mut self, time: Option<u64>) -> u64 {
        let time = time.unwrap_or(self.latest);
        self.latest = self.latest.max(time);
        time
    }

    /// Adds a copy of `record`.
    pub(crate) fn copy(&mut self, record: &[u8], time: Option<u64>) {
        let time = self.time_for(time);
        self.index.push(Placed { time, at: self.bytes.len(), len: record.len() as u32, ring: OWN });
        self.bytes.extend_from_slice(record);
    }

    /// Adds the record of `len` bytes at `at` in ring buffer `ring`'s data.
    pub(crate) fn place(&mut self, ring: u32, at: usize, len: usize, time: Option<u64>) {
        debug_assert!(ring != OWN);
        let time = self.time_for(time);
        self.index.push(Placed { time, at, len: len as u32, ring });
        self.in_rings += 1;
    }

    /// When every record was copied and they are in time order already (one ring's records,
    /// as side-band records mostly are), trades the round's bytes for the empty `out` rather
    /// than copying them, and empties the round: how many records `counted` counts.
    pub(crate) fn swap_if_in_order(
        &mut self,
        out: &mut Vec<u8>,
        counted: impl Fn(&[u8]) -> bool,
    ) -> Option<u64> {
        if self.in_rings > 0 || !out.is_empty() || !self.index.is_sorted_by_key(|p| p.time) {
            return None;
        }
        let n = self.index.iter().filter(|p| counted(&self.bytes[p.at..p.at + p.len as usize])).count();
        std::mem::swap(out, &mut self.bytes);
        self.clear();
        Some(n as u64)
    }

    /// Calls `each` with the round's records in time order (records of one time in the order
    /// they came), `rings` being the data of the ring buffers records were placed in, and
    /// empties the round.
    pub(crate) fn write<E>(
        &mut self,
        rings: &[&[u8]],
        mut each: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let bytes = &self.bytes;
        let mut emit = |p: &Placed| {
            let from = if p.ring == OWN { &bytes[..] } else { rings[p.ring as usize] };
            each(&from[p.at..p.at + p.len as usize])
        };
        // Each ring's records come in time order, one ring after another: a few runs, merged
        // as they are written. Many runs (many rings, or records out of order) are sorted.
        let mut runs = Vec::new();
        let mut start = 0;
        for (i, w) in self.index.windows(2).enumerate() {
            if w[1].time < w[0].time {
                runs.push(start..i + 1);
                start = i + 1;
                if runs.len() == MERGED_RUNS {
                    break;
                }
            }
        }
        let result = if runs.len() < MERGED_RUNS {
            runs.push(start..self.index.len());
            merge(&self.index, runs, &mut emit)
        } else {
            self.index.sort_by_key(|p| p.time);
            self.index.iter().try_for_each(&mut emit)
        };
        self.clear();
        result
    }

    /// The room the round's bytes take.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.index.clear();
        self.in_rings = 0;
    }
}

/// Calls `emit` with the records of `runs` (ranges of `index`, each in time order) in time
/// order, records of one time in the order of their runs.
fn merge<E>(
    index: &[Placed],
    mut runs: Vec<std::ops::Range<usize>>,
    emit: &mut impl FnMut(&Placed) -> Result<(), E>,
) -> Result<(), E> {
    loop {
        let mut first: Option<usize> = None;
        for (r, run) in runs.iter().enumerate() {
            if run.is_empty() {
                continue;
            }
            if first.is_none_or(|f| index[run.start].time < index[runs[f].start].time) {
                first = Some(r);
            }
        }
        let Some(r) = first else { return Ok(()) };
        emit(&index[runs[r].start])?;
        runs[r].start += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arrival numbers of a round's records as `write` hands them out, the round's
    /// records being copies whose bytes are their arrival number, at `times`.
    fn written(times: &[u64]) -> Vec<u64> {
        let mut round = Round::default();
        for (n, &t) in times.iter().enumerate() {
            round.copy(&(n as u64).to_le_bytes(), Some(t));
        }
        let mut out = Vec::new();
        round
            .write::<()>(&[], |rec| {
                out.push(u64::from_le_bytes(rec.try_into().unwrap()));
                Ok(())
            })
            .unwrap();
        assert!(round.is_empty());
        out
    }

    /// What a stable sort by time gives.
    fn sorted(times: &[u64]) -> Vec<u64> {
        let mut order: Vec<u64> = (0..times.len() as u64).collect();
        order.sort_by_key(|&n| times[n as usize]);
        order
    }

    #[test]
    fn runs_are_merged_and_many_are_sorted_as_a_stable_sort_orders_them() {
        // Four rings' records, times shared between them.
        let few: Vec<u64> =
            [0u64, 1, 2, 3].iter().flat_map(|&r| (0..50).map(move |i| i * 3 + r % 2)).collect();
        // Records out of order: runs of one or two.
        let mut x = 7u64;
        let many: Vec<u64> = (0..300)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % 40
            })
            .collect();
        for times in [few, many, vec![], vec![5], vec![3, 3, 1, 1]] {
            assert_eq!(written(&times), sorted(&times), "times {times:?}");
        }
    }
}
