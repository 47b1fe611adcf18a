//! Reading the fields of the sample records rperf asks the kernel for, and trimming the unused
//! tail of DWARF stack copies before they reach the file.

use crate::sys::sample;

/// The parts of a sample record the recorder looks at.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SampleView<'a> {
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub id: u64,
    /// Instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Kernel callchain entries (context markers included).
    pub callchain: Vec<u64>,
    /// Byte offset of the callchain's entry count, when present.
    pub callchain_at: Option<usize>,
    /// Byte offset of the user registers' ABI field, when present.
    pub regs_abi_at: Option<usize>,
    /// Byte offset of the first user register value, when registers were recorded.
    pub regs_at: Option<usize>,
    /// Byte offset of the `PERF_SAMPLE_STACK_USER` size field, when present.
    pub stack_at: Option<usize>,
    /// The record it came from.
    pub record: &'a [u8],
}

use rperf_perfdata::bytes::{u32_at, u64_at};

/// Each attribute id's sample type, looked up for every record drained. When every attribute
/// has the same one (the usual case: one event, and the side-band event made like it), that
/// one is the answer for any id, without a hash lookup per record.
#[derive(Default)]
pub struct SampleTypes {
    by_id: rustc_hash::FxHashMap<u64, u64>,
    /// The sample type every attribute has, while they all have one.
    uniform: Option<u64>,
}

impl SampleTypes {
    /// Notes the sample type of the attribute with `id`.
    pub fn insert(&mut self, id: u64, sample_type: u64) {
        self.uniform = match self.by_id.is_empty() {
            true => Some(sample_type),
            false => self.uniform.filter(|&u| u == sample_type),
        };
        if self.by_id.insert(id, sample_type).is_some_and(|old| old != sample_type) {
            self.uniform = None;
        }
    }

    /// The sample type of the attribute with `id`: the common one when all have one.
    pub fn get(&self, id: u64) -> Option<u64> {
        self.uniform.or_else(|| self.by_id.get(&id).copied())
    }
}

/// The time of a record of an event with `PERF_SAMPLE_IDENTIFIER` in its sample type (every
/// event rperf opens), whose sample type `sample_type_of` gives by id: a sample's `TIME` field,
/// else its `sample_id_all` trailer's. None without one.
pub fn time_of(record: &[u8], sample_type_of: impl Fn(u64) -> Option<u64>) -> Option<u64> {
    const SAMPLE: u32 = 9;
    if record.len() < 16 {
        return None;
    }
    if u32_at(record, 0)? == SAMPLE {
        let t = sample_type_of(u64_at(record, 8)?)?;
        let before = [sample::IP, sample::TID].iter().filter(|&&b| t & b != 0).count();
        return (t & sample::TIME != 0).then(|| u64_at(record, 16 + 8 * before)).flatten();
    }
    let t = sample_type_of(u64_at(record, record.len() - 8)?)?;
    if t & sample::TIME == 0 {
        return None;
    }
    let trailer = [sample::TID, sample::TIME, sample::ID, sample::STREAM_ID, sample::CPU, sample::IDENTIFIER];
    let len = 8 * trailer.iter().filter(|&&b| t & b != 0).count();
    let tid = usize::from(t & sample::TID != 0) * 8;
    u64_at(record, record.len().checked_sub(len)? + tid)
}

/// Parses a `PERF_RECORD_SAMPLE` laid out for `sample_type` with `regs_count` user registers
/// (rperf asks for no read block and no branch stack: a sample with either has only its fixed
/// fields read). Returns None for a record too short for its declared fields.
pub fn parse(record: &[u8], sample_type: u64, regs_count: usize) -> Option<SampleView<'_>> {
    let mut v = SampleView { record, ..Default::default() };
    let body = record.get(8..)?;
    // The first fixed fields, each where the ones before it leave it.
    let mut at = 8usize;
    let mut field = |bit: u64| {
        let here = at;
        at += usize::from(sample_type & bit != 0) * 8;
        (sample_type & bit != 0).then_some(here)
    };
    if let Some(at) = field(sample::IDENTIFIER) {
        v.id = u64_at(record, at)?;
    }
    if let Some(at) = field(sample::IP) {
        v.ip = u64_at(record, at)?;
    }
    if let Some(at) = field(sample::TID) {
        (v.pid, v.tid) = (u32_at(record, at)?, u32_at(record, at + 4)?);
    }
    if sample_type & (sample::READ | sample::BRANCH_STACK) != 0 {
        return Some(v);
    }
    let formats = rperf_perfdata::sample::Formats::from_bits(sample_type, 0, 0, regs_count);
    let layout = rperf_perfdata::sample::layout(body, &formats)?;
    // Offsets in the record: past its header.
    let in_record = |o: Option<usize>| o.map(|o| o + 8);
    v.callchain_at = in_record(layout.callchain);
    if let Some(at) = v.callchain_at {
        let nr = u64_at(record, at)? as usize;
        v.callchain = (0..nr).filter_map(|i| u64_at(record, at + 8 + 8 * i)).collect();
    }
    v.regs_abi_at = in_record(layout.regs_abi);
    v.regs_at = in_record(layout.regs);
    v.stack_at = in_record(layout.stack_user);
    Some(v)
}

impl SampleView<'_> {
    /// The user register at position `index` among the recorded ones.
    pub fn user_reg(&self, index: usize) -> Option<u64> {
        u64_at(self.record, self.regs_at?.checked_add(index.checked_mul(8)?)?)
    }
}

/// The copied size and the dynamic (filled) size of a sample's user stack at `stack_at`.
pub fn stack_sizes(record: &[u8], stack_at: usize) -> Option<(u64, u64)> {
    let size = u64_at(record, stack_at)?;
    if size == 0 {
        return Some((0, 0));
    }
    let dyn_at = stack_at.checked_add(8)?.checked_add(usize::try_from(size).ok()?)?;
    Some((size, u64_at(record, dyn_at)?))
}

/// Rewrites a sample whose last field is the user stack copy so that it keeps only the bytes that
/// hold stack: what the kernel filled (`dyn_size`), and at most `limit` bytes (the distance from
/// the stack pointer to the end of the thread's stack), rounded up to 8. Readers see a smaller
/// `size`, which the format allows. Returns None when the record does not need trimming.
pub fn trim_stack(record: &[u8], stack_at: usize, limit: Option<u64>) -> Option<Vec<u8>> {
    let (size, dyn_size) = stack_sizes(record, stack_at)?;
    let (size, dyn_size) = (size as usize, dyn_size as usize);
    if size == 0 {
        return None;
    }
    let data = stack_at + 8;
    let dyn_at = data + size;
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let keep = dyn_size.min(size).min(limit).next_multiple_of(8).min(size);
    let dyn_size = dyn_size.min(keep);
    if keep == size {
        return None;
    }
    let tail_from = dyn_at + 8;
    let mut out = Vec::with_capacity(record.len() - (size - keep));
    out.extend_from_slice(&record[..stack_at]);
    out.extend_from_slice(&(keep as u64).to_le_bytes());
    out.extend_from_slice(&record[data..data + keep]);
    out.extend_from_slice(&(dyn_size as u64).to_le_bytes());
    out.extend_from_slice(record.get(tail_from..)?);
    let new_size = u16::try_from(out.len()).ok()?;
    out[6..8].copy_from_slice(&new_size.to_le_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_type_for_every_attribute_is_given_for_any_id() {
        let mut types = SampleTypes::default();
        assert_eq!(types.get(1), None);
        types.insert(1, sample::TIME);
        types.insert(2, sample::TIME);
        assert_eq!(
            (types.get(1), types.get(2), types.get(3)),
            (Some(sample::TIME), Some(sample::TIME), Some(sample::TIME))
        );
        // Attributes that differ are told apart by id; an unknown id has none.
        types.insert(3, sample::TIME | sample::CPU);
        assert_eq!(
            (types.get(1), types.get(3), types.get(4)),
            (Some(sample::TIME), Some(sample::TIME | sample::CPU), None)
        );
        // An id given another type differs from the rest too.
        let mut types = SampleTypes::default();
        types.insert(1, sample::TIME);
        types.insert(1, sample::CPU);
        types.insert(2, sample::TIME);
        assert_eq!((types.get(1), types.get(2)), (Some(sample::CPU), Some(sample::TIME)));
    }

    fn sample_with_stack(stack: &[u8], dyn_size: u64) -> Vec<u8> {
        let mut r = vec![9, 0, 0, 0, 2, 0, 0, 0];
        r.extend_from_slice(&7u64.to_le_bytes()); // identifier
        r.extend_from_slice(&0x1234u64.to_le_bytes()); // ip
        r.extend_from_slice(&(stack.len() as u64).to_le_bytes());
        r.extend_from_slice(stack);
        r.extend_from_slice(&dyn_size.to_le_bytes());
        let n = r.len() as u16;
        r[6..8].copy_from_slice(&n.to_le_bytes());
        r
    }

    #[test]
    fn trims_to_dyn_size() {
        let rec = sample_with_stack(&[0xaa; 64], 12);
        let t = sample::IDENTIFIER | sample::IP | sample::STACK_USER;
        let v = parse(&rec, t, 0).unwrap();
        assert_eq!((v.id, v.ip), (7, 0x1234));
        let out = trim_stack(&rec, v.stack_at.unwrap(), None).unwrap();
        assert_eq!(out.len(), 8 + 16 + 8 + 16 + 8);
        assert_eq!(u16::from_le_bytes([out[6], out[7]]) as usize, out.len());
        let v2 = parse(&out, t, 0).unwrap();
        assert_eq!(u64_at(&out, v2.stack_at.unwrap()), Some(16));
        assert_eq!(u64_at(&out, out.len() - 8), Some(12));
    }

    #[test]
    fn trims_to_stack_end() {
        let rec = sample_with_stack(&[0xaa; 64], 64);
        let t = sample::IDENTIFIER | sample::IP | sample::STACK_USER;
        let v = parse(&rec, t, 0).unwrap();
        let out = trim_stack(&rec, v.stack_at.unwrap(), Some(20)).unwrap();
        let v2 = parse(&out, t, 0).unwrap();
        assert_eq!(u64_at(&out, v2.stack_at.unwrap()), Some(24));
        assert_eq!(u64_at(&out, out.len() - 8), Some(24));
    }

    #[test]
    fn times_of_samples_and_side_band_records() {
        use crate::records::{RecordBuilder, SampleId};
        let t = sample::IDENTIFIER | sample::IP | sample::TID | sample::TIME | sample::CPU;
        let mut rec = vec![9, 0, 0, 0, 0, 0, 48, 0];
        for v in [7u64, 0x1000, 5 | 5 << 32, 1234, 0] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(super::time_of(&rec, |id| (id == 7).then_some(t)), Some(1234));
        assert_eq!(super::time_of(&rec, |_| None), None);
        let b = RecordBuilder { sample_type: sample::IDENTIFIER | sample::TID | sample::TIME };
        let comm =
            b.comm(5, 5, "x", false, &SampleId { pid: 5, tid: 5, time: 99, id: 3, ..Default::default() });
        let st = sample::IDENTIFIER | sample::TID | sample::TIME;
        assert_eq!(super::time_of(&comm, |id| (id == 3).then_some(st)), Some(99));
    }

    #[test]
    fn short_records_are_rejected() {
        // A callchain count larger than the record must not read past it.
        let mut r = vec![9, 0, 0, 0, 0, 0, 16, 0];
        r.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&r, sample::CALLCHAIN, 0).is_none());
    }
}
