//! Native libraries inside APKs. Android maps a library stored uncompressed in an APK straight
//! from the APK file, at the library's offset; simpleperf records such a mapping as
//! `base.apk!/lib/arm64-v8a/libfoo.so` with offsets counted from the library, Linux perf as
//! `base.apk` with offsets counted from the APK. Both are found here.

use std::fs::File;
use std::path::Path;

/// A file stored uncompressed in an APK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the APK (`lib/arm64-v8a/libfoo.so`).
    pub name: String,
    /// Where its bytes start in the APK file.
    pub offset: u64,
    /// How many bytes it has.
    pub size: u64,
}

/// The APK and the entry a recorded path names (`X.apk!/lib/abi/libfoo.so`).
pub fn split(path: &str) -> Option<(&str, &str)> {
    let at = path.find(".apk!/")?;
    Some((&path[..at + 4], &path[at + 6..]))
}

/// The entries stored uncompressed in the APK at `path` (compressed ones cannot be mapped, so
/// no code runs from them); None when it is not a readable zip file.
pub fn stored_entries(path: &Path) -> Option<Vec<Entry>> {
    let mut zip = zip::ZipArchive::new(File::open(path).ok()?).ok()?;
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let Ok(f) = zip.by_index_raw(i) else { continue };
        if f.compression() != zip::CompressionMethod::Stored || f.is_dir() {
            continue;
        }
        let (Ok(name), Some(offset)) = (f.name(), f.data_start()) else { continue };
        out.push(Entry { name: name.into_owned(), offset, size: f.size() });
    }
    out.sort_by_key(|e| e.offset);
    Some(out)
}

/// The entry whose bytes hold file offset `offset` of the APK.
pub fn entry_at(entries: &[Entry], offset: u64) -> Option<&Entry> {
    let i = entries.partition_point(|e| e.offset <= offset);
    let e = entries.get(i.checked_sub(1)?)?;
    (offset - e.offset < e.size).then_some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_paths_name_the_apk_and_the_entry() {
        assert_eq!(
            split("/data/app/x/base.apk!/lib/arm64-v8a/libfoo.so"),
            Some(("/data/app/x/base.apk", "lib/arm64-v8a/libfoo.so"))
        );
        assert_eq!(split("/data/app/x/base.apk"), None);
    }

    #[test]
    fn offsets_fall_in_their_entry() {
        let e = |name: &str, offset, size| Entry { name: name.into(), offset, size };
        let entries = vec![e("a", 0x100, 0x10), e("b", 0x1000, 0x2000)];
        assert_eq!(entry_at(&entries, 0x1fff).map(|e| e.name.as_str()), Some("b"));
        assert_eq!(entry_at(&entries, 0x3000), None);
        assert_eq!(entry_at(&entries, 0x80), None);
        assert_eq!(entry_at(&entries, 0x10f).map(|e| e.name.as_str()), Some("a"));
    }
}
