//! Building the non-sample records rperf writes itself (COMM, FORK, MMAP, MMAP2), each followed
//! by the `sample_id` trailer that `sample_id_all` readers expect.

use crate::procfs::{self, MapLine};
use crate::sys::{misc, record_type, sample};
use rperf_perfdata::encode::{put_header, put_u32, put_u64};

/// The `sample_id` trailer fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleId {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp (0 for records describing the state before the recording).
    pub time: u64,
    /// CPU.
    pub cpu: u32,
    /// Event id the record is attributed to.
    pub id: u64,
}

/// Builds records for one sample_type layout.
#[derive(Clone, Copy, Debug)]
pub struct RecordBuilder {
    /// The sample_type shared by every attribute in the file.
    pub sample_type: u64,
}

impl RecordBuilder {
    fn trailer(&self, out: &mut Vec<u8>, s: &SampleId) {
        let t = self.sample_type;
        if t & sample::TID != 0 {
            put_u32(out, s.pid);
            put_u32(out, s.tid);
        }
        if t & sample::TIME != 0 {
            put_u64(out, s.time);
        }
        if t & sample::ID != 0 {
            put_u64(out, s.id);
        }
        if t & sample::STREAM_ID != 0 {
            put_u64(out, s.id);
        }
        if t & sample::CPU != 0 {
            put_u32(out, s.cpu);
            put_u32(out, 0);
        }
        if t & sample::IDENTIFIER != 0 {
            put_u64(out, s.id);
        }
    }

    fn finish(&self, mut out: Vec<u8>, type_: u32, misc: u16, s: &SampleId) -> Vec<u8> {
        self.trailer(&mut out, s);
        let size = out.len() as u16;
        let mut hdr = Vec::with_capacity(8);
        put_header(&mut hdr, type_, misc, size);
        out[..8].copy_from_slice(&hdr);
        out
    }

    /// PERF_RECORD_COMM.
    pub fn comm(&self, pid: u32, tid: u32, comm: &str, exec: bool, s: &SampleId) -> Vec<u8> {
        let mut out = vec![0u8; 8];
        put_u32(&mut out, pid);
        put_u32(&mut out, tid);
        push_padded_str(&mut out, comm);
        self.finish(out, record_type::COMM, if exec { misc::COMM_EXEC } else { 0 }, s)
    }

    /// PERF_RECORD_FORK.
    pub fn fork(&self, pid: u32, tid: u32, ppid: u32, ptid: u32, s: &SampleId) -> Vec<u8> {
        let mut out = vec![0u8; 8];
        for v in [pid, ppid, tid, ptid] {
            put_u32(&mut out, v);
        }
        put_u64(&mut out, s.time);
        self.finish(out, record_type::FORK, 0, s)
    }

    /// PERF_RECORD_MMAP2 for a user mapping, with the build id in place of the inode fields
    /// when it is known (`PERF_RECORD_MISC_MMAP_BUILD_ID`).
    pub fn mmap2(
        &self,
        pid: u32,
        tid: u32,
        m: &MapLine,
        path: &str,
        build_id: Option<&[u8]>,
        s: &SampleId,
    ) -> Vec<u8> {
        let mut out = vec![0u8; 8];
        put_u32(&mut out, pid);
        put_u32(&mut out, tid);
        put_u64(&mut out, m.start);
        put_u64(&mut out, m.end - m.start);
        put_u64(&mut out, m.pgoff);
        let mut misc_bits = misc::USER;
        match build_id {
            Some(id) if id.len() <= 20 => {
                misc_bits |= misc::MMAP_BUILD_ID;
                out.push(id.len() as u8);
                out.extend_from_slice(&[0, 0, 0]);
                let mut buf = [0u8; 20];
                buf[..id.len()].copy_from_slice(id);
                out.extend_from_slice(&buf);
            }
            _ => {
                put_u32(&mut out, m.major);
                put_u32(&mut out, m.minor);
                put_u64(&mut out, m.inode);
                put_u64(&mut out, 0);
            }
        }
        let p = m.perms.as_bytes();
        let prot = u32::from(p.first() == Some(&b'r'))
            | (u32::from(p.get(1) == Some(&b'w')) << 1)
            | (u32::from(p.get(2) == Some(&b'x')) << 2);
        let flags = if p.get(3) == Some(&b's') { 1 } else { 2 }; // MAP_SHARED / MAP_PRIVATE
        put_u32(&mut out, prot);
        put_u32(&mut out, flags);
        push_padded_str(&mut out, path);
        self.finish(out, record_type::MMAP2, misc_bits, s)
    }

    /// PERF_RECORD_MMAP for the kernel image (`[kernel.kallsyms]_text`), as perf writes it.
    pub fn kernel_mmap(&self, start: u64, len: u64, pgoff: u64, s: &SampleId) -> Vec<u8> {
        let mut out = vec![0u8; 8];
        put_u32(&mut out, u32::MAX);
        put_u32(&mut out, 0);
        put_u64(&mut out, start);
        put_u64(&mut out, len);
        put_u64(&mut out, pgoff);
        push_padded_str(&mut out, "[kernel.kallsyms]_text");
        self.finish(out, record_type::MMAP, misc::KERNEL, s)
    }
}

/// Appends a NUL-terminated string padded to 8 bytes.
fn push_padded_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    let len = (s.len() + 1).next_multiple_of(8);
    out.resize(out.len() + len - s.len(), 0);
}

/// Builds the records that describe an already-running process: a COMM and (for threads other
/// than the leader) a FORK per thread, and an MMAP2 per executable mapping (per file-backed
/// mapping with `all_file_maps`, which DWARF unwinders need to reach `.eh_frame_hdr`).
pub fn synthesize_process(
    pid: i32,
    b: &RecordBuilder,
    id: u64,
    all_file_maps: bool,
    build_ids: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    out: &mut dyn FnMut(Vec<u8>),
) {
    let tids = procfs::threads_of(pid);
    if tids.is_empty() {
        return;
    }
    for &tid in &tids {
        let sid = SampleId { pid: pid as u32, tid: tid as u32, time: 0, cpu: 0, id };
        if tid != pid {
            out(b.fork(pid as u32, tid as u32, pid as u32, pid as u32, &sid));
        }
        if let Some(comm) = procfs::comm_of(pid, tid) {
            out(b.comm(pid as u32, tid as u32, &comm, false, &sid));
        }
    }
    let sid = SampleId { pid: pid as u32, tid: pid as u32, time: 0, cpu: 0, id };
    let wanted = |m: &&MapLine| m.is_exec() || (all_file_maps && m.inode != 0);
    for m in procfs::maps_of(pid).iter().filter(wanted) {
        let path = if m.path.is_empty() { "//anon".to_string() } else { m.path.clone() };
        let bid = if m.inode != 0 { build_ids(&path) } else { None };
        out(b.mmap2(pid as u32, pid as u32, m, &path, bid.as_deref(), &sid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_record_layout() {
        let b = RecordBuilder { sample_type: sample::IDENTIFIER | sample::TID | sample::TIME };
        let r = b.comm(5, 6, "worker", false, &SampleId { pid: 5, tid: 6, time: 9, cpu: 0, id: 77 });
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), record_type::COMM);
        assert_eq!(u16::from_le_bytes([r[6], r[7]]) as usize, r.len());
        assert_eq!(&r[16..22], b"worker");
        // trailer: pid, tid, time, identifier
        assert_eq!(u64::from_le_bytes(r[r.len() - 8..].try_into().unwrap()), 77);
        assert_eq!(r.len() % 8, 0);
    }
}
