//! The debuginfod client cache, laid out as elfutils lays it out, so that rperf, gdb and perf
//! share what each fetched: `ROOT/BUILDID/debuginfo` and `ROOT/BUILDID/executable`. ROOT is
//! `$DEBUGINFOD_CACHE_PATH`, else `$XDG_CACHE_HOME/debuginfod_client`, else
//! `$HOME/.cache/debuginfod_client` (`Config`).
//!
//! A file a server did not have is remembered as an empty file with no permissions, as elfutils
//! does, for `ROOT/cache_miss_s` seconds (600 unless that file says otherwise); later reports
//! do not ask again in that time.
//!
//! Everything goes through the descriptors of checked folders (`crate::cache::Dir`): files are
//! created 0600, never through a link, and named only once checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cache::{Dir, NewFile};

/// How long a miss is remembered when the cache does not say.
const CACHE_MISS_S: i64 = 600;

/// What the cache knows of one file.
pub(super) enum Lookup {
    /// Fetched before: where it is kept, mapped.
    Hit(PathBuf, Arc<memmap2::Mmap>),
    /// No server had it, a short while ago.
    KnownMissing,
    /// Never asked, or the miss is too old.
    Unknown,
}

/// The client cache folder, checked and held open.
pub(super) struct Store {
    root: Dir,
    path: PathBuf,
    miss_s: i64,
}

impl Store {
    /// The cache folder the environment names, checked; the error says why it cannot be used.
    pub(super) fn open(path: Option<PathBuf>) -> Result<Store, String> {
        let path = path.ok_or("no cache folder is named (set DEBUGINFOD_CACHE_PATH or HOME)")?;
        let root = Dir::open(&path).map_err(|why| {
            format!("the cache folder {} is not used: {why}", crate::text::printable(&path.to_string_lossy()))
        })?;
        let miss_s = root
            .map("cache_miss_s", None)
            .and_then(|m| std::str::from_utf8(&m).ok()?.trim().parse().ok())
            .unwrap_or(CACHE_MISS_S);
        Ok(Store { root, path, miss_s })
    }

    /// The folder of one build id, when it is safe to use.
    fn folder(&self, hex: &str) -> Option<Dir> {
        self.root.sub(hex).ok()
    }

    /// What the cache holds for `hex`'s file `name` (`debuginfo`, `executable`).
    pub(super) fn lookup(&self, hex: &str, name: &str) -> Lookup {
        let Some(dir) = self.folder(hex) else { return Lookup::Unknown };
        match dir.stat(name) {
            None => Lookup::Unknown,
            Some((0, changed, _)) => {
                if now() - changed < self.miss_s {
                    Lookup::KnownMissing
                } else {
                    dir.remove(name);
                    Lookup::Unknown
                }
            }
            Some(_) => match dir.map(name, None) {
                Some(map) => Lookup::Hit(self.path_of(hex, name), map),
                None => Lookup::Unknown,
            },
        }
    }

    /// A new file to become `hex`'s file `name` once checked.
    pub(super) fn create(&self, hex: &str, name: &str) -> std::io::Result<NewFile> {
        self.root.sub(hex)?.create(name)
    }

    /// The file `hex`'s `name` became, mapped, and where it is.
    pub(super) fn open_kept(&self, hex: &str, name: &str) -> Option<(PathBuf, Arc<memmap2::Mmap>)> {
        let map = self.folder(hex)?.map(name, None)?;
        Some((self.path_of(hex, name), map))
    }

    /// Remembers that no server had `hex`'s file `name`: an empty file without permissions.
    pub(super) fn mark_missing(&self, hex: &str, name: &str) {
        if let Ok(mut file) = self.create(hex, name) {
            if file.set_mode(0).is_ok() {
                file.finish().ok();
            }
        }
    }

    /// The path shown for a cached file.
    fn path_of(&self, hex: &str, name: &str) -> PathBuf {
        self.path.join(hex).join(name)
    }

    /// The cache folder's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
