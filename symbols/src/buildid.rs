//! Build ids: the identity of an ELF file, of an in-memory image (the vDSO) and of the running
//! kernel, and how two of them compare.

use std::path::Path;

use object::{Object, ObjectSection};

/// The GNU build id of the ELF file at `path`, if it has one.
pub fn of_file(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let map = rperf_perfdata::mapped::map(&file).ok()?;
    of_image(&map)
}

/// The GNU build id of the ELF image stored at `offset`, `len` bytes long, in the file at
/// `path` (a library inside an APK).
pub fn of_file_range(path: &Path, offset: u64, len: u64) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let map = rperf_perfdata::mapped::map_range(&file, offset, usize::try_from(len).ok()?, false).ok()?;
    of_image(&map)
}

/// The GNU build id of an ELF image in memory.
pub fn of_image(image: &[u8]) -> Option<Vec<u8>> {
    let obj = object::File::parse(image).ok()?;
    obj.build_id().ok().flatten().map(|b| b.to_vec()).or_else(|| {
        // Some toolchains leave the note without a PT_NOTE; look at the section directly.
        let sec = obj.section_by_name(".note.gnu.build-id")?;
        parse_notes(sec.data().ok()?)
    })
}

/// The running kernel's build id, from /sys/kernel/notes.
pub fn of_kernel() -> Option<Vec<u8>> {
    parse_notes(&std::fs::read("/sys/kernel/notes").ok()?)
}

/// Whether two build ids are the same; perf pads short ids with zeros to 20 bytes.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let trim = |x: &[u8]| {
        let n = x.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1);
        x[..n].to_vec()
    };
    trim(a) == trim(b)
}

/// A build id in lower-case hex, as build-id caches name it.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Finds the NT_GNU_BUILD_ID note in a sequence of ELF notes.
fn parse_notes(mut d: &[u8]) -> Option<Vec<u8>> {
    while d.len() >= 12 {
        let namesz = u32::from_le_bytes(d[0..4].try_into().ok()?) as usize;
        let descsz = u32::from_le_bytes(d[4..8].try_into().ok()?) as usize;
        let ntype = u32::from_le_bytes(d[8..12].try_into().ok()?);
        let name_end = 12usize.checked_add(namesz.next_multiple_of(4))?;
        let desc_end = name_end.checked_add(descsz.next_multiple_of(4))?;
        if desc_end > d.len() {
            return None;
        }
        if ntype == 3 && d.get(12..12 + namesz)?.starts_with(b"GNU") {
            return Some(d[name_end..name_end + descsz].to_vec());
        }
        d = &d[desc_end..];
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_binary_has_a_build_id() {
        let exe = std::env::current_exe().unwrap();
        // Rust test binaries are linked with a build id on Linux.
        let id = super::of_file(&exe).expect("a build id");
        assert!(!id.is_empty());
    }

    #[test]
    fn padded_build_ids_match() {
        assert!(super::same(&[1, 2, 3, 0, 0], &[1, 2, 3]));
        assert!(!super::same(&[1, 2, 4], &[1, 2, 3]));
        assert_eq!(super::hex(&[0xab, 1]), "ab01");
    }

    #[test]
    fn note_parser() {
        let mut n = Vec::new();
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&4u32.to_le_bytes());
        n.extend_from_slice(&3u32.to_le_bytes());
        n.extend_from_slice(b"GNU\0");
        n.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(super::parse_notes(&n), Some(vec![1, 2, 3, 4]));
    }
}
