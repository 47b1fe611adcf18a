//! Reading files that a recording names or that sit in shared directories (`/tmp/perf-PID.map`,
//! `jit-PID.dump`, `--kallsyms`): only regular files, only up to a size, and, where another
//! user could have planted them, only those of a trusted owner. A FIFO must not hang a report,
//! a link to `/dev/zero` must not fill memory, and another user's map must not put names into
//! root's report.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Who may own a file for it to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owners {
    /// The reading user, root, or this other user (the owner of a recorded process).
    Trusted(Option<u32>),
    /// Anyone (the user asked for it, e.g. with `--force`, or named the file themselves).
    Anyone,
}

/// Why a file was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It does not exist.
    Missing,
    /// Anything else, said in words (the path is not included).
    Unsafe(String),
}

/// Reads the file at `path` when it is a regular file (symbolic links are followed only when
/// `follow_links`), at most `limit` bytes long and owned by one of `owners`.
pub fn read(path: &Path, limit: u64, owners: Owners, follow_links: bool) -> Result<Vec<u8>, Refusal> {
    let (file, len) = open(path, limit, owners, follow_links)?;
    let mut out = Vec::with_capacity(len as usize);
    // The file may grow while it is read; the limit holds all the same.
    file.take(limit).read_to_end(&mut out).map_err(|e| Refusal::Unsafe(format!("cannot be read: {e}")))?;
    Ok(out)
}

/// Opens the file at `path` under the conditions of `read`, to be read a part at a time: the
/// file and its length (read no more than `limit` of it: it may grow).
pub fn open(
    path: &Path,
    limit: u64,
    owners: Owners,
    follow_links: bool,
) -> Result<(std::fs::File, u64), Refusal> {
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if !follow_links {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| match e
        .raw_os_error()
    {
        Some(libc::ENOENT) => Refusal::Missing,
        Some(libc::ELOOP) => Refusal::Unsafe("is a symbolic link".into()),
        _ => Refusal::Unsafe(format!("cannot be opened: {e}")),
    })?;
    let meta = file.metadata().map_err(|e| Refusal::Unsafe(format!("cannot be examined: {e}")))?;
    if !meta.is_file() {
        return Err(Refusal::Unsafe(format!("is not a regular file ({})", kind(&meta))));
    }
    if let Owners::Trusted(other) = owners {
        let me = nix::unistd::geteuid().as_raw();
        let uid = meta.uid();
        if uid != me && uid != 0 && Some(uid) != other {
            return Err(Refusal::Unsafe(format!("belongs to uid {uid}, not to this user or root")));
        }
    }
    if meta.len() > limit {
        return Err(Refusal::Unsafe(format!("is {} bytes, over the {limit}-byte limit", meta.len())));
    }
    Ok((file, meta.len()))
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit() {
        let dir = std::env::temp_dir().join(format!("rperf-trusted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("map");
        std::fs::write(&file, b"1000 10 f\n").unwrap();
        let trusted = Owners::Trusted(None);
        assert_eq!(read(&file, 100, trusted, false).unwrap(), b"1000 10 f\n");
        assert!(matches!(read(&file, 4, trusted, false), Err(Refusal::Unsafe(w)) if w.contains("limit")));
        assert_eq!(read(&dir.join("none"), 100, trusted, false), Err(Refusal::Missing));
        let link = dir.join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(
            matches!(read(&link, 100, trusted, false), Err(Refusal::Unsafe(w)) if w.contains("symbolic link"))
        );
        assert!(matches!(read(&link, 100, trusted, true), Err(Refusal::Unsafe(w)) if w.contains("device")));
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read(&fifo, 100, trusted, false), Err(Refusal::Unsafe(w)) if w.contains("FIFO")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
