//! Decoding records, around the reader's limits: records its parser would panic on are
//! refused, and samples of counter groups it misreads are rewritten first; and the user records
//! the reader leaves undecoded that reports need (simpleperf's tracing data).

use linux_perf_data::linux_perf_event_reader::{EventRecord, RawEventRecord};

/// Parses a record; None when it cannot be decoded. `buf` holds a rewritten copy of the record
/// when it needs one.
pub fn parse<'a>(record: &'a RawEventRecord<'_>, buf: &'a mut Vec<u8>) -> Option<EventRecord<'a>> {
    if !record_is_sane(record) {
        return None;
    }
    match record.parse() {
        Ok(p) => Some(p),
        Err(_) => reparse_read_group_sample(record, buf).map(EventRecord::Sample),
    }
}

/// Checks that the reader's parser may be given this record: it asserts (panics) on an MMAP2
/// record whose build-id length is over 20.
fn record_is_sane(record: &RawEventRecord<'_>) -> bool {
    const MMAP_BUILD_ID: u16 = 1 << 14;
    if record.record_type == linux_perf_data::linux_perf_event_reader::RecordType::MMAP2
        && record.misc & MMAP_BUILD_ID != 0
    {
        // pid, tid (u32), addr, len, pgoff (u64), then the build id's length byte.
        return record.data.get(32..33).is_some_and(|b| b.as_slice()[0] <= 20);
    }
    true
}

/// Where a sample's PERF_SAMPLE_READ group block lies in its record.
struct GroupBlock {
    /// Its first byte (the value count).
    start: usize,
    /// Its first value, after the count and the enabled and running times.
    first_value: usize,
    /// The byte after it.
    end: usize,
    /// How many values it holds.
    nr: usize,
    /// Words per value (the value, then its id and lost count when recorded).
    per_value: usize,
    /// Each value's id follows it.
    has_id: bool,
}

/// A little-endian sample's formats, body and the layout of its fields; None for other
/// records, or a sample whose fields do not fit it.
fn sample_layout<'a>(
    record: &'a RawEventRecord<'_>,
) -> Option<(rperf_perfdata::sample::Formats, std::borrow::Cow<'a, [u8]>, rperf_perfdata::sample::Layout)> {
    use linux_perf_data::linux_perf_event_reader::RecordType;
    let info = record.parse_info;
    if record.record_type != RecordType::SAMPLE || info.endian != linux_perf_data::Endianness::LittleEndian {
        return None;
    }
    let formats = rperf_perfdata::sample::Formats {
        sample: info.sample_format,
        read: info.read_format,
        branch: info.branch_sample_format,
        user_regs: info.user_regs_count as usize,
    };
    let body = record.data.as_slice();
    let layout = rperf_perfdata::sample::layout(&body, &formats)?;
    Some((formats, body, layout))
}

/// The group block of a sample: None unless the record is a little-endian sample with a group
/// read that fits it.
fn group_block(record: &RawEventRecord<'_>) -> Option<GroupBlock> {
    use linux_perf_data::linux_perf_event_reader::ReadFormat;
    if !record.parse_info.read_format.contains(ReadFormat::GROUP) {
        return None;
    }
    let (formats, body, layout) = sample_layout(record)?;
    let (start, first_value) = (layout.read?, layout.read_values?);
    let nr = rperf_perfdata::bytes::u64_at(&body, start)? as usize;
    let per_value = formats.read_value_words();
    let has_id = formats.read.contains(ReadFormat::ID);
    // The layout checked that the values fit the record.
    let end = first_value + nr * per_value * 8;
    Some(GroupBlock { start, first_value, end, nr, per_value, has_id })
}

/// The values of a sample's counter group (simpleperf's `--add-counter`), in group order, each
/// with its id when recorded.
pub fn group_values(record: &RawEventRecord<'_>) -> Option<Vec<(u64, Option<u64>)>> {
    let g = group_block(record)?;
    let bytes = record.data.as_slice();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let at = |i: usize| g.first_value + i * g.per_value * 8;
    Some((0..g.nr).map(|i| (word(at(i)), g.has_id.then(|| word(at(i) + 8)))).collect())
}

/// linux-perf-event-reader reads a PERF_SAMPLE_READ block with the group and single layouts
/// swapped, so samples of counter groups (simpleperf's `--add-counter`) fail to parse. This
/// rewrites the block into the shape that reader expects (one value; the group's values are
/// read with `group_values`) and parses again.
pub fn reparse_read_group_sample<'a>(
    record: &RawEventRecord<'_>,
    buf: &'a mut Vec<u8>,
) -> Option<linux_perf_data::linux_perf_event_reader::SampleRecord<'a>> {
    use linux_perf_data::linux_perf_event_reader::{RawData, SampleRecord};
    let GroupBlock { start, first_value, end, has_id, .. } = group_block(record)?;
    let info = record.parse_info;
    // The reader's layout: the count's word, the times, then one value and its id.
    let expected = (first_value - start) + 8 * usize::from(has_id);
    let bytes = record.data.as_slice();
    buf.clear();
    buf.extend_from_slice(&bytes[..start]);
    buf.resize(start + expected, 0);
    buf.extend_from_slice(&bytes[end..]);
    SampleRecord::parse::<byteorder::LittleEndian>(RawData::from(&buf[..]), record.misc, &info).ok()
}

/// The taken branches of a sample's branch stack (PERF_SAMPLE_BRANCH_STACK), newest first, each
/// as (from, to): the reader skips them. None when the sample has none, or they do not fit it.
pub fn branch_stack(record: &RawEventRecord<'_>) -> Option<Vec<(u64, u64)>> {
    let (_, body, layout) = sample_layout(record)?;
    let nr = rperf_perfdata::bytes::u64_at(&body, layout.branch_stack?)? as usize;
    let at = layout.branches?;
    let word = |i: usize| rperf_perfdata::bytes::u64_at(&body, at + 8 * i).unwrap_or(0);
    Some((0..nr).map(|i| (word(3 * i), word(3 * i + 1))).collect())
}

/// The tracing data simpleperf writes as a record of the data section (perf writes it as a
/// feature section): a u32 size, then the data.
pub fn tracing_data_record(r: &linux_perf_data::RawUserRecord<'_>) -> Option<Vec<u8>> {
    use linux_perf_data::UserRecordType;
    if r.record_type != UserRecordType::PERF_HEADER_TRACING_DATA
        && r.record_type != UserRecordType::SIMPLEPERF_TRACING_DATA
    {
        return None;
    }
    let data = r.data.as_slice();
    let size: [u8; 4] = data.get(..4)?.try_into().ok()?;
    let size = match r.endian {
        linux_perf_data::Endianness::LittleEndian => u32::from_le_bytes(size),
        linux_perf_data::Endianness::BigEndian => u32::from_be_bytes(size),
    } as usize;
    Some(data.get(4..)?.get(..size).unwrap_or(&data[4..]).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linux_perf_data::linux_perf_event_reader::{
        BranchSampleFormat, Endianness, RawData, ReadFormat, RecordIdParseInfo, RecordParseInfo, RecordType,
        SampleFormat,
    };

    fn info(sample_format: SampleFormat, read_format: ReadFormat) -> RecordParseInfo {
        RecordParseInfo {
            endian: Endianness::LittleEndian,
            sample_format,
            branch_sample_format: BranchSampleFormat::empty(),
            read_format,
            common_data_offset_from_end: None,
            sample_regs_user: 0,
            user_regs_count: 0,
            sample_regs_intr: 0,
            intr_regs_count: 0,
            id_parse_info: RecordIdParseInfo {
                nonsample_record_id_offset_from_end: None,
                sample_record_id_offset_from_start: None,
            },
            nonsample_record_time_offset_from_end: None,
            sample_record_time_offset_from_start: None,
        }
    }

    /// A sample of a two-counter group with ip, tid and the group read, as simpleperf's
    /// `--add-counter` writes them: the values of both counters follow `nr`.
    #[test]
    fn read_group_samples_are_rewritten_for_the_reader() {
        let info = info(
            SampleFormat::IP | SampleFormat::TID | SampleFormat::READ,
            ReadFormat::GROUP | ReadFormat::ID,
        );
        let mut d = Vec::new();
        for v in [0x4000u64, 7 | (8 << 32), 2, 100, 1, 200, 2] {
            d.extend_from_slice(&v.to_le_bytes());
        }
        let raw = RawEventRecord {
            record_type: RecordType::SAMPLE,
            misc: 2,
            data: RawData::from(&d[..]),
            parse_info: info,
        };
        let mut buf = Vec::new();
        let Some(EventRecord::Sample(s)) = parse(&raw, &mut buf) else { panic!("not decoded") };
        assert_eq!((s.ip, s.pid, s.tid), (Some(0x4000), Some(7), Some(8)));
    }

    #[test]
    fn mmap2_with_an_impossible_build_id_length_is_refused() {
        let info = info(SampleFormat::empty(), ReadFormat::empty());
        let mut d = [0u8; 64];
        d[32] = 200;
        let raw = RawEventRecord {
            record_type: RecordType::MMAP2,
            misc: 1 << 14,
            data: RawData::from(&d[..]),
            parse_info: info,
        };
        assert!(parse(&raw, &mut Vec::new()).is_none());
    }
}
