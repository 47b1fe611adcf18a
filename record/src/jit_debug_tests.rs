//! Tests of the GDB JIT interface reader, on lists in this process's own memory.

use super::*;

/// This process reads itself: a list of two entries, then one removed.
#[test]
fn reads_a_list_in_memory() {
    let image_a = std::fs::read("/proc/self/exe").unwrap();
    let image_b = std::fs::read("/bin/true").unwrap();
    // Not an ELF image (a symbol file freed and reused): never stored.
    let garbage = b"not an ELF image".to_vec();
    #[repr(C)]
    struct CodeEntry {
        next: u64,
        prev: u64,
        symfile: u64,
        size: u64,
    }
    let c = Box::new(CodeEntry {
        next: 0,
        prev: 0,
        symfile: garbage.as_ptr() as u64,
        size: garbage.len() as u64,
    });
    let b = Box::new(CodeEntry {
        next: &*c as *const CodeEntry as u64,
        prev: 0,
        symfile: image_b.as_ptr() as u64,
        size: image_b.len() as u64,
    });
    let a = Box::new(CodeEntry {
        next: &*b as *const CodeEntry as u64,
        prev: 0,
        symfile: image_a.as_ptr() as u64,
        size: image_a.len() as u64,
    });
    let mut desc = [0u64; 7];
    desc[0] = 1 | (1 << 32);
    desc[1] = &*a as *const CodeEntry as u64;
    desc[2] = &*a as *const CodeEntry as u64;
    let mut r = JitDebugReader::new(true, JitLimits { image: 1 << 40, total: 1 << 40, map: 1 << 40 });
    r.store.keep_fresh();
    let pid = std::process::id();
    let mut w = Watched::new(List::Jit, desc.as_ptr() as u64, 5, 0);
    assert_eq!(r.read_list(pid, &mut w), Read::Changed);
    // Copied oldest first (the list's last entry first), in polls of bounded time.
    std::iter::from_fn(|| (!w.pending.is_empty()).then(|| r.copy_pending(pid, &mut w))).count();
    let fresh = r.store.take_fresh();
    assert_eq!(r.store.len(), 2);
    assert!(fresh[0].image == image_b && fresh[1].image == image_a);
    assert_eq!(r.store.get(1).registered_ns, 5);
    assert!(r.store.get(1).code.1 > r.store.get(1).code.0, "the test binary has code");
    // Unchanged: one descriptor read, no entry read.
    let entries = r.reads.entries;
    assert_eq!(r.read_list(pid, &mut w), Read::Unchanged);
    assert_eq!(r.reads.entries, entries);
    // The second entry is removed: it ends, the first stays, nothing is copied again.
    let mut a = a;
    a.next = 0;
    desc[0] = 1 | (2 << 32);
    std::hint::black_box((&a, &desc));
    assert_eq!(r.read_list(pid, &mut w), Read::Changed);
    r.copy_pending(pid, &mut w);
    assert_eq!(r.store.len(), 2);
    assert_eq!(r.store.get(1).removed_ns, u64::MAX);
    assert!(r.store.get(0).removed_ns < u64::MAX);
    // The section holds both, as the report reads it, with the removal time updated.
    let (mut file, len) = r.store.section().unwrap();
    let mut bytes = Vec::new();
    std::io::Seek::rewind(&mut file).and_then(|_| std::io::Read::read_to_end(&mut file, &mut bytes)).unwrap();
    assert_eq!(bytes.len() as u64, len);
    let files = rperf_perfdata::sections::decode_jit_symfiles(&bytes);
    assert!(files[0].image == image_b && files[1].image == image_a);
    assert!(files[0].removed_ns < u64::MAX && files[1].removed_ns == u64::MAX);
    drop((b, c));
}

/// What lies at a descriptor's address is no descriptor (a table of pointers, as one page away
/// from libLLVM's descriptor): read once, never walked nor tried again, and let go.
#[test]
fn what_is_no_descriptor_is_read_once_and_let_go() {
    let text = b"sub1_sub2_sub3_sub4_sub5_sub6\0".to_vec();
    let table = [text.as_ptr() as u64; 7];
    let mut r = JitDebugReader::new(true, JitLimits { image: 1 << 40, total: 1 << 40, map: 1 << 40 });
    let pid = std::process::id();
    r.processes.insert(pid, vec![Watched::new(List::Jit, table.as_ptr() as u64, 0, 0)]);
    r.poll_process(pid, true);
    assert_eq!((r.reads.descriptors, r.reads.entries), (1, 0));
    assert!(!r.watches(pid) && r.next_read().is_none());
    std::hint::black_box((&text, &table));
}
