//! The one walk over a data section's records, for every reader of perf.data: the damaged-file
//! check in `checked` (where readable records end), the report's record reader, and the
//! records inflated from perf's compressed records. Where a record ends (its size, an AUXTRACE
//! record's trace data after it) and why a walk stops are decided here only.

use crate::encode::AUXTRACE;

/// Bytes to walk: a mapped file read a window at a time, or bytes in memory.
pub trait Source {
    /// Why bytes could not be read.
    type Error;
    /// At least the `n` bytes at offset `at`. The walk asks only for bytes inside the section
    /// it was given.
    fn bytes(&mut self, at: u64, n: u64) -> Result<&[u8], Self::Error>;
}

/// Bytes in memory, at offset 0.
impl Source for &[u8] {
    type Error = std::convert::Infallible;
    fn bytes(&mut self, at: u64, n: u64) -> Result<&[u8], Self::Error> {
        let from = usize::try_from(at).unwrap_or(usize::MAX).min(self.len());
        let to = usize::try_from(at.saturating_add(n)).unwrap_or(usize::MAX).clamp(from, self.len());
        Ok(&self[from..to])
    }
}

/// A record the walk passed: its header, where it is and where the next one starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its offset.
    pub at: u64,
    /// Its type.
    pub kind: u32,
    /// Its misc field.
    pub misc: u16,
    /// Its size, header included.
    pub size: u64,
    /// Where the next record starts (past an AUXTRACE record's trace data).
    pub next: u64,
    /// An AUXTRACE record's trace data reaches past the end of the section: (the bytes it
    /// claims, the bytes left after the record). The walk ends after it.
    pub trace_cut: Option<(u64, u64)>,
}

/// Why a walk stopped before the end of its section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop<E> {
    /// The section ends inside a record header: `left` bytes were left.
    HeaderCut {
        /// The header's offset.
        at: u64,
        /// The bytes left.
        left: u64,
    },
    /// A header whose size is under its own 8 bytes.
    TooSmall {
        /// The header's offset.
        at: u64,
        /// The size it gives.
        size: u64,
    },
    /// A record reaching past the end of the section.
    PastEnd {
        /// The record's offset.
        at: u64,
        /// The size it gives.
        size: u64,
    },
    /// The bytes could not be read.
    Unreadable {
        /// Where.
        at: u64,
        /// Why.
        error: E,
    },
}

/// A walk over the records from one offset to the end of a section.
#[derive(Clone, Copy, Debug)]
pub struct Walk {
    at: u64,
    end: u64,
    big_endian: bool,
}

impl Walk {
    /// A walk over the records at `start..end`, in the byte order given.
    pub fn new(start: u64, end: u64, big_endian: bool) -> Walk {
        Walk { at: start, end, big_endian }
    }

    /// The offset of the next record (or where the walk stopped).
    pub fn at(&self) -> u64 {
        self.at
    }

    /// The end of the section.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The next record; None at the end of the section. After a `Stop` the walk is over.
    pub fn next<S: Source>(&mut self, src: &mut S) -> Option<Result<Step, Stop<S::Error>>> {
        let at = self.at;
        if at >= self.end {
            return None;
        }
        let step = self.step(src, at);
        self.at = match &step {
            Ok(s) => s.next,
            Err(_) => self.end,
        };
        Some(step)
    }

    fn step<S: Source>(&self, src: &mut S, at: u64) -> Result<Step, Stop<S::Error>> {
        let left = self.end - at;
        if left < 8 {
            return Err(Stop::HeaderCut { at, left });
        }
        let unreadable = |error| Stop::Unreadable { at, error };
        let head = src.bytes(at, 8).map_err(unreadable)?;
        let (kind, misc, size) = match (head.get(..8), self.big_endian) {
            (Some(h), false) => (
                u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")),
                u16::from_le_bytes([h[4], h[5]]),
                u16::from_le_bytes([h[6], h[7]]),
            ),
            (Some(h), true) => (
                u32::from_be_bytes(h[0..4].try_into().expect("4 bytes")),
                u16::from_be_bytes([h[4], h[5]]),
                u16::from_be_bytes([h[6], h[7]]),
            ),
            (None, _) => return Err(Stop::HeaderCut { at, left: head.len() as u64 }),
        };
        let size = u64::from(size);
        let trace = match has_trace(kind, size) && size <= left {
            true => {
                let b = src.bytes(at + 8, 8).map_err(unreadable)?;
                let b: [u8; 8] = b.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]);
                Some(if self.big_endian { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
            }
            false => None,
        };
        let (next, trace_cut) = match extent(at, self.end, kind, size, trace) {
            Extent::Next(next) => (next, None),
            Extent::TooSmall { size } => return Err(Stop::TooSmall { at, size }),
            Extent::PastEnd { size } => return Err(Stop::PastEnd { at, size }),
            Extent::TraceCut { claimed, left } => (self.end, Some((claimed, left))),
        };
        Ok(Step { at, kind, misc, size, next, trace_cut })
    }
}

/// Where the record at some offset ends, or why it cannot be walked past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extent {
    /// The next record starts here (past an AUXTRACE record's trace data).
    Next(u64),
    /// The header gives a size under the header's own 8 bytes.
    TooSmall {
        /// The size the header gives.
        size: u64,
    },
    /// The record reaches past the end of the data section.
    PastEnd {
        /// The size the header gives.
        size: u64,
    },
    /// An AUXTRACE record whose trace data reaches past the end of the data section.
    TraceCut {
        /// The trace bytes it claims.
        claimed: u64,
        /// The bytes that follow it in the data section.
        left: u64,
    },
}

/// The extent of the record at `at` of a data section that ends at `end`, whose header gives
/// type `kind` and `size`; `trace` is the trace size an AUXTRACE record of 16 bytes or more
/// gives after its header (its trace data follows the record, outside its size).
fn extent(at: u64, end: u64, kind: u32, size: u64, trace: Option<u64>) -> Extent {
    if size < 8 {
        return Extent::TooSmall { size };
    }
    let next = at.saturating_add(size);
    if next > end {
        return Extent::PastEnd { size };
    }
    match trace.filter(|_| has_trace(kind, size)) {
        Some(claimed) => match next.checked_add(claimed).filter(|e| *e <= end) {
            Some(e) => Extent::Next(e),
            None => Extent::TraceCut { claimed, left: end - next },
        },
        None => Extent::Next(next),
    }
}

/// Whether a record of type `kind` and `size` carries a trace size to read for `extent`: an
/// AUXTRACE record of 16 bytes or more.
fn has_trace(kind: u32, size: u64) -> bool {
    kind == AUXTRACE && size >= 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_end_where_their_size_and_trace_say() {
        assert_eq!(extent(100, 200, 9, 40, None), Extent::Next(140));
        assert_eq!(extent(100, 200, 9, 4, None), Extent::TooSmall { size: 4 });
        assert_eq!(extent(100, 200, 9, 120, None), Extent::PastEnd { size: 120 });
        assert_eq!(extent(100, 200, AUXTRACE, 48, Some(20)), Extent::Next(168));
        assert_eq!(extent(100, 200, AUXTRACE, 48, Some(80)), Extent::TraceCut { claimed: 80, left: 52 });
        assert_eq!(
            extent(100, 200, AUXTRACE, 48, Some(u64::MAX)),
            Extent::TraceCut { claimed: u64::MAX, left: 52 }
        );
        // Other records' bytes there are no trace size.
        assert_eq!(extent(100, 200, 9, 48, Some(80)), Extent::Next(148));
    }

    fn record(kind: u32, size: u16, body: &[u8]) -> Vec<u8> {
        let mut r = kind.to_le_bytes().to_vec();
        r.extend(0u16.to_le_bytes());
        r.extend(size.to_le_bytes());
        r.extend(body);
        r
    }

    #[test]
    fn a_walk_passes_whole_records_and_says_why_it_stops() {
        let mut bytes = record(9, 16, &[0; 8]);
        bytes.extend(record(AUXTRACE, 16, &5u64.to_le_bytes()));
        bytes.extend([7; 5]); // the trace data
        bytes.extend(record(3, 40, &[0; 4])); // cut short
        let mut src: &[u8] = &bytes;
        let mut walk = Walk::new(0, bytes.len() as u64, false);
        let first = walk.next(&mut src).unwrap().unwrap();
        assert_eq!((first.at, first.kind, first.size, first.next), (0, 9, 16, 16));
        assert_eq!(walk.next(&mut src).unwrap().unwrap().next, 37);
        assert_eq!(walk.next(&mut src).unwrap(), Err(Stop::PastEnd { at: 37, size: 40 }));
        assert!(walk.next(&mut src).is_none(), "a walk is over once it stopped");
        let mut short = Walk::new(0, 5, false);
        assert_eq!(short.next(&mut src).unwrap(), Err(Stop::HeaderCut { at: 0, left: 5 }));
        let mut cut = Walk::new(16, 32, false);
        let step = cut.next(&mut src).unwrap().unwrap();
        assert_eq!((step.next, step.trace_cut), (32, Some((5, 0))));
    }
}
