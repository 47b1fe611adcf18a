//! Finding the binary for a recorded path: the path itself, or under a symbol directory by
//! path, by basename, or through a `build_id_list` file (`build_id=relative/path` lines, the
//! layout of simpleperf's binary cache). Build ids are checked when both sides have one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a binary was found, or why it was not used.
pub enum Found {
    /// A file whose build id matches (or could not be compared).
    File(PathBuf),
    /// Candidates existed but had another build id.
    BuildIdMismatch(PathBuf),
    /// Nothing found.
    Missing,
}

/// Looks binaries up under an optional symbol directory.
pub struct BinaryFinder {
    symfs: Option<PathBuf>,
    by_build_id: HashMap<String, PathBuf>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl BinaryFinder {
    /// A finder for `symfs` (None: binaries are read at their recorded paths).
    pub fn new(symfs: Option<&Path>) -> BinaryFinder {
        let mut by_build_id = HashMap::new();
        if let Some(dir) = symfs {
            if let Ok(list) = std::fs::read_to_string(dir.join("build_id_list")) {
                for line in list.lines() {
                    if let Some((id, rel)) = line.split_once('=') {
                        let id = id.trim().trim_start_matches("0x").to_ascii_lowercase();
                        by_build_id.insert(id, dir.join(rel.trim()));
                    }
                }
            }
        }
        BinaryFinder { symfs: symfs.map(Path::to_path_buf), by_build_id }
    }

    /// Finds the binary recorded as `path` with `build_id`.
    pub fn find(&self, path: &str, build_id: Option<&[u8]>) -> Found {
        let mut candidates = Vec::new();
        if let Some(id) = build_id.filter(|b| !b.is_empty()) {
            let key = hex(id);
            // Build ids may be stored padded to 20 bytes; match on the given prefix.
            if let Some(p) = self
                .by_build_id
                .iter()
                .find(|(k, _)| key.starts_with(k.as_str()) || k.starts_with(&key))
                .map(|(_, p)| p)
            {
                candidates.push(p.clone());
            }
        }
        if let Some(dir) = &self.symfs {
            candidates.push(dir.join(path.trim_start_matches('/')));
            if let Some(base) = Path::new(path).file_name() {
                candidates.push(dir.join(base));
            }
        }
        candidates.push(PathBuf::from(path));
        let mut mismatch = None;
        for c in candidates {
            if !c.is_file() {
                continue;
            }
            match (build_id.filter(|b| b.iter().any(|x| *x != 0)), file_build_id(&c)) {
                (Some(want), Some(have)) if !same_build_id(want, &have) => {
                    mismatch.get_or_insert(c);
                }
                _ => return Found::File(c),
            }
        }
        mismatch.map_or(Found::Missing, Found::BuildIdMismatch)
    }
}

/// Compares build ids, ignoring zero padding at the end (perf pads them to 20 bytes).
pub fn same_build_id(a: &[u8], b: &[u8]) -> bool {
    let trim = |x: &[u8]| {
        let n = x.iter().rposition(|c| *c != 0).map_or(0, |i| i + 1);
        x[..n].to_vec()
    };
    trim(a) == trim(b)
}

fn file_build_id(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: read-only mapping of a binary, as in ElfInfo::load.
    let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    let obj = object::File::parse(&map[..]).ok()?;
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    #[test]
    fn padded_build_ids_match() {
        assert!(super::same_build_id(&[1, 2, 3, 0, 0], &[1, 2, 3]));
        assert!(!super::same_build_id(&[1, 2, 4], &[1, 2, 3]));
    }
}
