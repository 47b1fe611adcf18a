//! Where the fields of a `PERF_RECORD_SAMPLE` lie: the layout the attribute's formats give its
//! body, found once for the recorder (which trims stack copies and reads registers) and the
//! reader (which reads what its parser skips: counter groups, branch stacks).

use linux_perf_data::linux_perf_event_reader::{BranchSampleFormat, ReadFormat, SampleFormat};

use crate::bytes::{u32_at, u64_at};

/// The formats a sample is laid out by.
#[derive(Clone, Copy, Debug)]
pub struct Formats {
    /// The attribute's `sample_type`.
    pub sample: SampleFormat,
    /// Its `read_format`.
    pub read: ReadFormat,
    /// Its `branch_sample_type`.
    pub branch: BranchSampleFormat,
    /// How many user registers `sample_regs_user` asks for.
    pub user_regs: usize,
}

impl Default for Formats {
    /// No field beyond the fixed ones.
    fn default() -> Formats {
        Formats {
            sample: SampleFormat::empty(),
            read: ReadFormat::empty(),
            branch: BranchSampleFormat::empty(),
            user_regs: 0,
        }
    }
}

impl Formats {
    /// Words per value of a read block: the value, then its id and lost count where the read
    /// format asks for them (PERF_FORMAT_LOST, 1 << 4, has no name in the reader).
    pub fn read_value_words(&self) -> usize {
        1 + usize::from(self.read.contains(ReadFormat::ID)) + usize::from(self.read.bits() & (1 << 4) != 0)
    }

    /// From the attribute's fields as numbers.
    pub fn from_bits(
        sample_type: u64,
        read_format: u64,
        branch_sample_type: u64,
        user_regs: usize,
    ) -> Formats {
        Formats {
            sample: SampleFormat::from_bits_truncate(sample_type),
            read: ReadFormat::from_bits_truncate(read_format),
            branch: BranchSampleFormat::from_bits_truncate(branch_sample_type),
            user_regs,
        }
    }
}

/// Byte offsets in a sample's body (the record after its 8-byte header) of the fields that do
/// not have a fixed place, each where the sample has it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The `PERF_SAMPLE_READ` block.
    pub read: Option<usize>,
    /// A group read's first value (after its count and the enabled and running times), each
    /// value `Formats::read_value_words` words.
    pub read_values: Option<usize>,
    /// The call chain's entry count, its entries after it.
    pub callchain: Option<usize>,
    /// The raw (tracepoint) data's `u32` size, the data after it.
    pub raw: Option<usize>,
    /// The branch stack's entry count.
    pub branch_stack: Option<usize>,
    /// Its first entry (after the hardware index, when recorded).
    pub branches: Option<usize>,
    /// The user registers' ABI word.
    pub regs_abi: Option<usize>,
    /// The first user register, when the ABI word says registers follow.
    pub regs: Option<usize>,
    /// The user stack copy's size, the copy after it.
    pub stack_user: Option<usize>,
}

/// The fixed fields before the read block, in their order.
const FIXED: [SampleFormat; 9] = [
    SampleFormat::IDENTIFIER,
    SampleFormat::IP,
    SampleFormat::TID,
    SampleFormat::TIME,
    SampleFormat::ADDR,
    SampleFormat::ID,
    SampleFormat::STREAM_ID,
    SampleFormat::CPU,
    SampleFormat::PERIOD,
];

/// The layout of `body` (little-endian); None when a field it declares does not fit it.
pub fn layout(body: &[u8], f: &Formats) -> Option<Layout> {
    let mut at = 8 * FIXED.iter().filter(|b| f.sample.contains(**b)).count();
    let mut l = Layout::default();
    // Each step checks that the field fits before the next is looked for: counts come from
    // the file.
    let mut take = |n: usize| -> Option<usize> {
        let here = at;
        at = at.checked_add(n)?;
        (at <= body.len()).then_some(here)
    };
    take(0)?;
    if f.sample.contains(SampleFormat::READ) {
        let times = usize::from(f.read.contains(ReadFormat::TOTAL_TIME_ENABLED))
            + usize::from(f.read.contains(ReadFormat::TOTAL_TIME_RUNNING));
        let per_value = f.read_value_words();
        let start = take(0)?;
        l.read = Some(start);
        if f.read.contains(ReadFormat::GROUP) {
            let nr = usize::try_from(u64_at(body, take(8)?)?).ok()?;
            take(8 * times)?;
            l.read_values = Some(take(nr.checked_mul(per_value * 8)?)?);
        } else {
            take(8 * (times + per_value))?;
        }
    }
    if f.sample.contains(SampleFormat::CALLCHAIN) {
        let at = take(8)?;
        l.callchain = Some(at);
        take(usize::try_from(u64_at(body, at)?).ok()?.checked_mul(8)?)?;
    }
    if f.sample.contains(SampleFormat::RAW) {
        let at = take(4)?;
        l.raw = Some(at);
        // The kernel pads the data so that it ends on 8 bytes; `size` counts the padding.
        take(u32_at(body, at)? as usize)?;
    }
    if f.sample.contains(SampleFormat::BRANCH_STACK) {
        let at = take(8)?;
        l.branch_stack = Some(at);
        if f.branch.contains(BranchSampleFormat::HW_INDEX) {
            take(8)?;
        }
        let nr = usize::try_from(u64_at(body, at)?).ok()?;
        l.branches = Some(take(nr.checked_mul(24)?)?);
    }
    if f.sample.contains(SampleFormat::REGS_USER) {
        let at = take(8)?;
        l.regs_abi = Some(at);
        if u64_at(body, at)? != 0 {
            l.regs = Some(take(f.user_regs.checked_mul(8)?)?);
        }
    }
    if f.sample.contains(SampleFormat::STACK_USER) {
        l.stack_user = Some(take(8)?);
    }
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn fields_after_variable_ones_are_found() {
        // ip, tid; a callchain of 2; raw data of 4 bytes (its size word and it: 8 bytes); a
        // branch stack of 1; user registers (abi 2, 3 registers); a stack copy of 0 bytes.
        let mut body = words(&[0x1000, 7 | (7 << 32), 2, 0xa, 0xb]);
        body.extend_from_slice(&4u32.to_le_bytes());
        body.extend_from_slice(&[1, 2, 3, 4]);
        body.extend(words(&[1, 0x10, 0x20, 0, 2, 1, 2, 3, 0]));
        let f = Formats {
            sample: SampleFormat::IP
                | SampleFormat::TID
                | SampleFormat::CALLCHAIN
                | SampleFormat::RAW
                | SampleFormat::BRANCH_STACK
                | SampleFormat::REGS_USER
                | SampleFormat::STACK_USER,
            user_regs: 3,
            ..Default::default()
        };
        let l = layout(&body, &f).expect("a layout");
        assert_eq!(l.callchain, Some(16));
        assert_eq!(l.raw, Some(40));
        assert_eq!((l.branch_stack, l.branches), (Some(48), Some(56)));
        assert_eq!((l.regs_abi, l.regs), (Some(80), Some(88)));
        assert_eq!(l.stack_user, Some(112));
        // A count that reaches past the record is no layout.
        let mut bad = body.clone();
        bad[16] = 200;
        assert_eq!(layout(&bad, &f), None);
    }
}
