//! The 104-byte `PERFILE2` header: magic, sizes, the attribute, data and event-type sections,
//! and the bitmap of feature sections that follow the data.

/// The magic of little-endian perf.data files.
pub const MAGIC: &[u8; 8] = b"PERFILE2";
/// The header's size.
pub const HEADER_SIZE: u64 = 104;
/// File offset of the attribute entry size (a perf_event_attr plus its id section).
pub const ATTR_SIZE_AT: u64 = 16;
/// File offset of the attribute section's (offset, size).
pub const ATTRS_AT: u64 = 24;
/// File offset of the data section's (offset, size).
pub const DATA_AT: u64 = 40;
/// File offset of the data section's size.
pub const DATA_SIZE_AT: u64 = 48;
/// File offset of the (unused since Linux 2.6.3x) event-types section's (offset, size).
pub const EVENT_TYPES_AT: u64 = 56;
/// File offset of the 256-bit feature bitmap.
pub const FEATURES_AT: u64 = 72;
/// Each feature section has a (offset, size) entry in the table after the data section.
pub const FEATURE_ENTRY_SIZE: u64 = 16;

/// The header's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Size of one attribute entry: the perf_event_attr and the (offset, size) of its ids.
    pub attr_size: u64,
    /// (offset, size) of the attribute section.
    pub attrs: (u64, u64),
    /// (offset, size) of the data section.
    pub data: (u64, u64),
    /// (offset, size) of the event-types section.
    pub event_types: (u64, u64),
    /// Feature sections present, in increasing order.
    pub features: Vec<u32>,
}

/// The `u64` at `at` of a header already checked to be whole.
fn u64_at(b: &[u8], at: u64) -> u64 {
    crate::bytes::u64_at(b, at as usize).expect("a whole header")
}

impl FileHeader {
    /// Reads a little-endian header; None when `b` is shorter than a header or lacks the magic.
    pub fn parse(b: &[u8]) -> Option<FileHeader> {
        if b.len() < HEADER_SIZE as usize || &b[..8] != MAGIC {
            return None;
        }
        let pair = |at| (u64_at(b, at), u64_at(b, at + 8));
        let bitmap = &b[FEATURES_AT as usize..HEADER_SIZE as usize];
        let features = (0..256u32).filter(|f| bitmap[(*f / 8) as usize] & (1 << (f % 8)) != 0).collect();
        Some(FileHeader {
            attr_size: u64_at(b, ATTR_SIZE_AT),
            attrs: pair(ATTRS_AT),
            data: pair(DATA_AT),
            event_types: pair(EVENT_TYPES_AT),
            features,
        })
    }

    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_SIZE as usize);
        h.extend_from_slice(MAGIC);
        for v in [
            HEADER_SIZE,
            self.attr_size,
            self.attrs.0,
            self.attrs.1,
            self.data.0,
            self.data.1,
            self.event_types.0,
            self.event_types.1,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h.extend_from_slice(&feature_bitmap(&self.features));
        debug_assert_eq!(h.len() as u64, HEADER_SIZE);
        h
    }

    /// File offset of the feature table: right after the data section.
    pub fn feature_table_at(&self) -> u64 {
        self.data.0.saturating_add(self.data.1)
    }
}

/// The 32-byte feature bitmap of a set of feature ids (ids past 255 are ignored).
pub fn feature_bitmap(features: &[u32]) -> [u8; 32] {
    let mut bits = [0u8; 32];
    for &f in features.iter().filter(|f| **f < 256) {
        bits[(f / 8) as usize] |= 1 << (f % 8);
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_sets_feature_bits() {
        let h = FileHeader {
            attr_size: 144,
            attrs: (104, 288),
            data: (4096, 10),
            event_types: (0, 0),
            features: vec![2, 3, 192],
        };
        let b = h.encode();
        assert_eq!(&b[..8], MAGIC);
        assert_eq!(b[FEATURES_AT as usize], 0b1100);
        assert_eq!(b[FEATURES_AT as usize + 24], 1);
        assert_eq!(FileHeader::parse(&b), Some(h));
        assert_eq!(FileHeader::parse(&b[..100]), None);
    }
}
