//! rperf's cache folder: what reports work out the same way every time and that costs more to
//! work out than to read back (the running kernel's symbols, debug sections inflated from
//! their compressed form).
//!
//! The folder is `$RPERF_CACHE_DIR`, else `$XDG_CACHE_HOME/rperf`, else `$HOME/.cache/rperf`;
//! it is used only when it is a folder of this user that no one else can write to (it is
//! created so when missing). Files are created readable by their owner only, never through a
//! symbolic link, written under a name of their own and then renamed into place, so a reader
//! never sees half a file; files are read only when they are regular files of this user.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The cache folder `sub` (created when missing), when there is a safe one to use.
pub fn dir(sub: &str) -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let root = env("RPERF_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("rperf")))
        .or_else(|| env("HOME").map(|d| d.join(".cache").join("rperf")))?;
    // The root and the folder in it: this user's, written by no one else, not links; each
    // is checked before anything is made in it.
    let private = |p: &Path| {
        if std::fs::symlink_metadata(p).is_err() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(p).ok()?;
        }
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        std::fs::symlink_metadata(p)
            .is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o022 == 0)
            .then_some(())
    };
    private(&root)?;
    let dir = if sub.is_empty() { root } else { root.join(sub) };
    private(&dir)?;
    Some(dir)
}

/// The file at `path` mapped, when it is a regular file of this user of `len` bytes (any
/// length when None).
pub fn map(path: &Path, len: Option<u64>) -> Option<Arc<memmap2::Mmap>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.uid() != me || len.is_some_and(|l| l != meta.len()) || meta.len() == 0 {
        return None;
    }
    // SAFETY: a private file of this user, mapped read-only; files are replaced by rename,
    // never rewritten in place.
    unsafe { memmap2::Mmap::map(&file) }.ok().map(Arc::new)
}

/// A cache file being written: it takes its name once complete (`finish`), and is removed
/// when dropped before.
pub struct NewFile {
    out: std::io::BufWriter<std::fs::File>,
    temp: PathBuf,
    path: PathBuf,
    written: u64,
    done: bool,
}

impl NewFile {
    /// A new file to become `path`.
    pub fn create(path: &Path) -> std::io::Result<NewFile> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = path.with_file_name(format!(".{name}.{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)?;
        let out = std::io::BufWriter::with_capacity(1 << 16, file);
        Ok(NewFile { out, temp, path: path.to_path_buf(), written: 0, done: false })
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Gives the file its name.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        std::fs::rename(&self.temp, &self.path)?;
        self.done = true;
        Ok(())
    }
}

impl Write for NewFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if !self.done {
            std::fs::remove_file(&self.temp).ok();
        }
    }
}

/// Removes the oldest regular files of `dir` until the rest take at most `limit` bytes.
pub fn prune(dir: &Path, limit: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= limit {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}
