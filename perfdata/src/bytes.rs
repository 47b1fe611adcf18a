//! Little-endian numbers at an offset of a byte slice, as perf.data, ring-buffer records and
//! runtimes' in-memory structures lay them out. `None` when the slice is too short, so that
//! lengths read from a file or another process never index past what was read.

/// The `u16` at `at`.
pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

/// The `u32` at `at`.
pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// The `u64` at `at`.
pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_inside_the_slice_only() {
        let b = [1, 0, 0, 0, 2, 0, 0, 0, 3];
        assert_eq!(u32_at(&b, 4), Some(2));
        assert_eq!(u64_at(&b, 0), Some(0x2_0000_0001));
        assert_eq!(u16_at(&b, 8), None);
        assert_eq!(u64_at(&b, usize::MAX), None);
    }
}
