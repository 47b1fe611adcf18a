//! The binary cache `rperf android pull-binaries` fills (simpleperf's layout: each device path
//! under the cache folder, and `build_id_list` naming them by build id).
//!
//! The folder may sit in a repository or another folder the user does not fully control, and
//! the paths come from a recording: every folder and file is made relative to a descriptor of
//! the cache folder, one component at a time, never through a symbolic link, and each device
//! path is checked before anything is made for it.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, OFlag};
use nix::sys::stat::{fstat, mkdirat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// The most bytes of a path's component and of a whole path (Linux's NAME_MAX and PATH_MAX).
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;

/// The cache folder, held open.
pub struct BinaryCache {
    root: OwnedFd,
    path: PathBuf,
}

const DIR_FLAGS: OFlag =
    OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);

/// Why `path`, a device path from a recording, cannot be cached: it must be absolute, name a
/// file, and hold no `..` or `.` component, no control character, and no component or whole
/// path longer than Linux allows. Its components otherwise.
pub fn device_path(path: &str) -> Result<Vec<&str>, String> {
    if !path.starts_with('/') {
        return Err("not an absolute path".into());
    }
    if path.chars().any(char::is_control) {
        return Err("holds a control character".into());
    }
    if path.len() > PATH_MAX {
        return Err(format!("longer than {PATH_MAX} bytes"));
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if parts.is_empty() {
        return Err("names no file".into());
    }
    if parts.iter().any(|c| *c == "." || *c == "..") {
        return Err("holds a . or .. component".into());
    }
    if parts.iter().any(|c| c.len() > NAME_MAX) {
        return Err(format!("has a component longer than {NAME_MAX} bytes"));
    }
    Ok(parts)
}

fn link_error(at: &Path, e: Errno) -> String {
    match e {
        Errno::ELOOP | Errno::ENOTDIR => format!("{} is a symbolic link or not a folder", at.display()),
        e => format!("{}: {e}", at.display()),
    }
}

/// Whether `name` in `dir` is a regular file (a link is not followed); None when there is
/// nothing there.
fn regular(dir: &OwnedFd, name: &str) -> Option<bool> {
    let s = nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
    Some(s.st_mode & libc::S_IFMT == libc::S_IFREG)
}

impl BinaryCache {
    /// Opens the cache folder `path`, creating it when missing; the folder itself must not be
    /// a link.
    pub fn open(path: &Path) -> anyhow::Result<BinaryCache> {
        match std::fs::symlink_metadata(path) {
            Err(_) => std::fs::create_dir_all(path)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?,
            Ok(m) if m.file_type().is_symlink() => anyhow::bail!(
                "{} is a symbolic link: rperf writes binaries only into a real folder; give another with -o",
                path.display()
            ),
            Ok(_) => {}
        }
        let root = openat(nix::fcntl::AT_FDCWD, path, DIR_FLAGS, Mode::empty())
            .map_err(|e| anyhow::anyhow!("{}", link_error(path, e)))?;
        Ok(BinaryCache { root, path: path.to_path_buf() })
    }

    /// The folder holding `parts`' file, made where missing (when `create`), walked without
    /// following links.
    fn folder(&self, parts: &[&str], create: bool) -> Result<(OwnedFd, PathBuf), String> {
        let mut at = self.path.clone();
        let mut fd =
            openat(self.root.as_fd(), ".", DIR_FLAGS, Mode::empty()).map_err(|e| link_error(&at, e))?;
        for name in &parts[..parts.len() - 1] {
            at.push(name);
            let opened = match openat(fd.as_fd(), *name, DIR_FLAGS, Mode::empty()) {
                Err(Errno::ENOENT) if create => {
                    mkdirat(fd.as_fd(), *name, Mode::from_bits_truncate(0o755))
                        .or_else(|e| if e == Errno::EEXIST { Ok(()) } else { Err(e) })
                        .map_err(|e| format!("cannot create {}: {e}", at.display()))?;
                    openat(fd.as_fd(), *name, DIR_FLAGS, Mode::empty())
                }
                other => other,
            };
            fd = opened.map_err(|e| link_error(&at, e))?;
        }
        Ok((fd, at.join(parts[parts.len() - 1])))
    }

    /// Whether the file for `parts` is there, a regular file (not a link).
    pub fn holds(&self, parts: &[&str]) -> bool {
        let Ok((dir, _)) = self.folder(parts, false) else { return false };
        regular(&dir, parts[parts.len() - 1]) == Some(true)
    }

    /// Copies the file `from` (pulled to a private folder) into the cache for `parts`.
    pub fn store(&self, parts: &[&str], from: &Path) -> Result<(), String> {
        self.place(parts, &mut |out| std::io::copy(&mut std::fs::File::open(from)?, out).map(drop))
    }

    /// Writes the file for `parts` with `write`, under a name of its own first, then renamed
    /// into place. An existing link or folder there is refused, never followed or replaced.
    fn place(
        &self,
        parts: &[&str],
        write: &mut dyn FnMut(&mut std::fs::File) -> std::io::Result<()>,
    ) -> Result<(), String> {
        let (dir, at) = self.folder(parts, true)?;
        let name = parts[parts.len() - 1];
        if regular(&dir, name) == Some(false) {
            return Err(format!("{} is a symbolic link or not a regular file", at.display()));
        }
        let short: String = name.chars().take(200).collect();
        let temp = format!(".{short}.rperf-{}", std::process::id());
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(dir.as_fd(), temp.as_str(), flags, Mode::from_bits_truncate(0o644))
            .map_err(|e| format!("cannot create a file beside {}: {e}", at.display()))?;
        let mut out = std::fs::File::from(fd);
        let placed = write(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| format!("{}: {e}", at.display()))
            .and_then(|()| {
                renameat(dir.as_fd(), temp.as_str(), dir.as_fd(), name)
                    .map_err(|e| format!("{}: {e}", at.display()))
            });
        if placed.is_err() {
            unlinkat(dir.as_fd(), temp.as_str(), UnlinkatFlags::NoRemoveDir).ok();
        }
        placed
    }

    /// `build_id_list`'s lines: (0xBUILD_ID, path in the cache).
    pub fn read_list(&self) -> Vec<(String, String)> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let mut text = String::new();
        if let Ok(fd) = openat(self.root.as_fd(), "build_id_list", flags, Mode::empty()) {
            let regular = fstat(&fd).is_ok_and(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG);
            if regular {
                std::fs::File::from(fd).take(64 << 20).read_to_string(&mut text).ok();
            }
        }
        text.lines()
            .filter_map(|l| l.split_once('=').map(|(id, p)| (id.trim().to_string(), p.trim().to_string())))
            .collect()
    }

    /// Writes `build_id_list`.
    pub fn write_list(&self, list: &[(String, String)]) -> anyhow::Result<()> {
        let text: String = list.iter().map(|(id, p)| format!("{id}={p}\n")).collect();
        self.place(&["build_id_list"], &mut |out| out.write_all(text.as_bytes()))
            .map_err(|e| anyhow::anyhow!("cannot write the build id list: {e}"))
    }
}
