//! Where a record of a data section ends: the rules every walker of perf.data follows (the
//! damaged-file check in `checked` and the report's record reader), in one place.

use crate::encode::AUXTRACE;

/// Where the record at some offset ends, or why it cannot be walked past.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
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
pub fn extent(at: u64, end: u64, kind: u32, size: u64, trace: Option<u64>) -> Extent {
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
pub fn has_trace(kind: u32, size: u64) -> bool {
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
}
