//! Folders searched recursively for binaries by build id: a report's `--symdir DIR`, and
//! `rperf android`'s `-lib DIR` (the developer's build folders, searched for unstripped copies
//! of the binaries a recording names, as simpleperf's binary_cache_builder.py `-lib` searches
//! them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Folders deeper than this under a build folder are not searched.
const MAX_DEPTH: usize = 24;
/// Entries read per build folder, at most.
const MAX_ENTRIES: usize = 200_000;

/// The ELF files under `dirs` (recursively, links not followed), by build id (hex); where two
/// share a build id, the larger (unstripped) one.
pub fn index(dirs: &[PathBuf]) -> HashMap<String, PathBuf> {
    let mut found: HashMap<String, (u64, PathBuf)> = HashMap::new();
    for dir in dirs {
        let mut budget = MAX_ENTRIES;
        walk(dir, 0, &mut budget, &mut |path, len| {
            if let Some(id) = elf_build_id(path) {
                let id = crate::buildid::hex(&id);
                if found.get(&id).is_none_or(|(l, _)| len > *l) {
                    found.insert(id, (len, path.to_path_buf()));
                }
            }
        });
    }
    found.into_iter().map(|(id, (_, p))| (id, p)).collect()
}

fn walk(dir: &Path, depth: usize, budget: &mut usize, each: &mut dyn FnMut(&Path, u64)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(meta) = e.path().symlink_metadata() else { continue };
        if meta.is_dir() && depth < MAX_DEPTH {
            walk(&e.path(), depth + 1, budget, each);
        } else if meta.is_file() {
            each(&e.path(), meta.len());
        }
    }
}

/// The build id of `path` when it is an ELF file (its first bytes are read before anything
/// is mapped).
fn elf_build_id(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).ok()?.read_exact(&mut magic).ok()?;
    (magic == *b"\x7fELF").then(|| crate::buildid::of_file(path)).flatten()
}
