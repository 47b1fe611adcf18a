//! Encoders of perf's own header features and record framing, in the byte layout perf's
//! header.c reads.

/// `PERF_RECORD_HEADER_BUILD_ID`, the record type of HEADER_BUILD_ID entries.
pub const HEADER_BUILD_ID: u32 = 67;
/// `PERF_RECORD_FINISHED_ROUND`: every record before it may be sorted and processed.
pub const FINISHED_ROUND: u32 = 68;
/// `PERF_RECORD_AUXTRACE`: its trace data (a size in the record) follows the record.
pub const AUXTRACE: u32 = 71;
/// `PERF_RECORD_COMPRESSED` (perf record -z): zstd-compressed records.
pub const COMPRESSED: u32 = 81;
/// `PERF_RECORD_COMPRESSED2` (perf 6.x): the compressed size, then the data and padding.
pub const COMPRESSED2: u32 = 83;
const MISC_KERNEL: u16 = 1;
const MISC_USER: u16 = 2;
/// The build id's length is stored in the entry (not implied to be 20).
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// Appends a little-endian u64.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian u32.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a record header.
pub fn put_header(out: &mut Vec<u8>, type_: u32, misc: u16, size: u16) {
    put_u32(out, type_);
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
}

/// Appends a perf header string: u32 length (NUL included, padded to 64), then the bytes.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(64);
    put_u32(out, len as u32);
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + len - s.len(), 0);
}

/// A feature that is one string (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC).
pub fn string_feature(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    put_string(&mut v, s);
    v
}

/// HEADER_CMDLINE.
pub fn cmdline_feature(args: &[String]) -> Vec<u8> {
    let mut v = Vec::new();
    put_u32(&mut v, args.len() as u32);
    for a in args {
        put_string(&mut v, a);
    }
    v
}

/// HEADER_SAMPLE_TIME: the times of the first and the last sample.
pub fn sample_time_feature(first: u64, last: u64) -> Vec<u8> {
    let mut v = Vec::new();
    put_u64(&mut v, first);
    put_u64(&mut v, last);
    v
}

/// HEADER_CLOCKID: the resolution of the clock samples are stamped with, in ns.
pub fn clockid_feature(resolution_ns: u64) -> Vec<u8> {
    let mut v = Vec::new();
    put_u64(&mut v, resolution_ns);
    v
}

/// HEADER_CLOCK_DATA (version 1): the sample clock's id, and one moment read on the wall
/// clock and on the sample clock, both in ns, from which readers tell the time of day of a
/// sample.
pub fn clock_data_feature(clockid: u32, wall_ns: u64, clock_ns: u64) -> Vec<u8> {
    let mut v = Vec::new();
    put_u32(&mut v, 1);
    put_u32(&mut v, clockid);
    put_u64(&mut v, wall_ns);
    put_u64(&mut v, clock_ns);
    v
}

/// HEADER_NRCPUS.
pub fn nrcpus_feature(available: u32, online: u32) -> Vec<u8> {
    let mut v = Vec::new();
    put_u32(&mut v, available);
    put_u32(&mut v, online);
    v
}

/// One event of HEADER_EVENT_DESC.
pub struct EventDesc<'a> {
    /// The perf_event_attr bytes as the file stores them.
    pub attr: &'a [u8],
    /// Its sample ids.
    pub ids: &'a [u64],
    /// Its name.
    pub name: &'a str,
}

/// HEADER_EVENT_DESC: every attribute with its name and ids.
pub fn event_desc_feature(attr_size: u32, events: &[EventDesc<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, events.len() as u32);
    put_u32(&mut out, attr_size);
    for e in events {
        out.extend_from_slice(e.attr);
        put_u32(&mut out, e.ids.len() as u32);
        put_string(&mut out, e.name);
        for id in e.ids {
            put_u64(&mut out, *id);
        }
    }
    out
}

/// One HEADER_BUILD_ID entry.
#[derive(Clone, Debug)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel, as perf writes it).
    pub pid: i32,
    /// True for kernel images and modules.
    pub kernel: bool,
    /// The build id (at most 20 bytes are stored).
    pub build_id: Vec<u8>,
    /// The file's path (`[kernel.kallsyms]` for the kernel).
    pub path: String,
}

/// HEADER_BUILD_ID: one `build_id_event` per binary.
pub fn build_id_feature(entries: &[BuildIdEntry]) -> Vec<u8> {
    let mut v = Vec::new();
    for e in entries {
        let name_len = (e.path.len() + 1).next_multiple_of(64);
        let size = 8 + 4 + 24 + name_len;
        let misc = MISC_BUILD_ID_SIZE | if e.kernel { MISC_KERNEL } else { MISC_USER };
        put_header(&mut v, HEADER_BUILD_ID, misc, size as u16);
        v.extend_from_slice(&e.pid.to_le_bytes());
        let n = e.build_id.len().min(20);
        let mut id = [0u8; 24];
        id[..n].copy_from_slice(&e.build_id[..n]);
        id[20] = n as u8;
        v.extend_from_slice(&id);
        v.extend_from_slice(e.path.as_bytes());
        v.resize(v.len() + name_len - e.path.len(), 0);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_padded_to_64() {
        let v = string_feature("x86_64");
        assert_eq!(u32::from_le_bytes(v[..4].try_into().unwrap()), 64);
        assert_eq!(v.len(), 68);
        assert_eq!(&v[4..10], b"x86_64");
    }

    #[test]
    fn build_id_entries_carry_their_length() {
        let v = build_id_feature(&[BuildIdEntry {
            pid: -1,
            kernel: false,
            build_id: vec![0xab; 20],
            path: "/bin/x".into(),
        }]);
        assert_eq!(v.len(), 8 + 4 + 24 + 64);
        assert_eq!(u32::from_le_bytes(v[..4].try_into().unwrap()), HEADER_BUILD_ID);
        assert_eq!(v[12 + 20], 20);
        assert_eq!(&v[36..42], b"/bin/x");
    }
}
