//! rperf's cache folder: what reports work out the same way every time and that costs more to
//! work out than to read back (the running kernel's symbols, debug sections inflated from
//! their compressed form).
//!
//! The folder is `$RPERF_CACHE_DIR`, else `$XDG_CACHE_HOME/rperf`, else `$HOME/.cache/rperf`.
//! It is used only when no other user can change what its path leads to: the folder is this
//! user's and written by no one else, and every folder above it belongs to this user or root
//! and is either written by no one else or sticky with the next folder down this user's or
//! root's. Otherwise reports run without it, and say so once (`take_warning`).
//!
//! The path is walked once, component by component; a link on it is read and its target walked
//! the same way (a link of another user is refused), and every later
//! operation (open, create, rename, remove, list) is made relative to the descriptor of the
//! folder that was checked: swapping a folder of the path afterwards changes nothing. Files
//! are created readable by their owner only, never through a symbolic link, written under a
//! name of their own and then renamed into place, so a reader never sees half a file; files
//! are read only when they are regular files of this user.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use nix::fcntl::{openat, renameat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// A checked cache folder, held open: every operation goes through its descriptor.
#[derive(Clone, Debug)]
pub struct Dir {
    fd: Arc<OwnedFd>,
}

/// The cache folder `sub` (created when missing), when there is a safe one to use.
pub fn dir(sub: &str) -> Option<Dir> {
    static ROOT: OnceLock<Option<Dir>> = OnceLock::new();
    let root = ROOT
        .get_or_init(|| {
            let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
            let path = env("RPERF_CACHE_DIR")
                .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("rperf")))
                .or_else(|| env("HOME").map(|d| d.join(".cache").join("rperf")))?;
            match Dir::open(&path) {
                Ok(dir) => Some(dir),
                Err(why) => {
                    *WARNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                        "the cache folder {} is not used: {why}; reports run without it (set \
                         RPERF_CACHE_DIR to a folder that only you can change)",
                        crate::text::printable(&path.to_string_lossy())
                    ));
                    None
                }
            }
        })
        .as_ref()?;
    if sub.is_empty() {
        return Some(root.clone());
    }
    root.sub(sub).ok()
}

static WARNING: Mutex<Option<String>> = Mutex::new(None);

/// Why the cache folder is not used, once: the first caller gets it, later ones None.
pub fn take_warning() -> Option<String> {
    WARNING.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

fn check_owner(path: &Path, stat: &FileStat) -> Result<(), String> {
    if stat.st_uid != 0 && stat.st_uid != me() {
        return Err(format!("{} belongs to another user (uid {})", path.display(), stat.st_uid));
    }
    Ok(())
}

/// A plain name inside a folder: no separators, not `.` or `..`.
fn plain(name: &str) -> std::io::Result<&str> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a plain file name"));
    }
    Ok(name)
}

/// Opening a folder of a walk: searched through only (`O_PATH`), or the folder to use.
const SEARCH: OFlag =
    OFlag::O_PATH.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);
const USE: OFlag = OFlag::O_RDONLY.union(OFlag::O_DIRECTORY).union(OFlag::O_NOFOLLOW).union(OFlag::O_CLOEXEC);

/// The folder `name` in `parent`, made (0700) when missing, opened with `flags`, never through
/// a link.
fn open_or_make(parent: &OwnedFd, name: &std::ffi::OsStr, flags: OFlag) -> nix::Result<OwnedFd> {
    match openat(parent, name, flags, Mode::empty()) {
        Err(nix::errno::Errno::ENOENT) => {
            match mkdirat(parent, name, Mode::from_bits_truncate(0o700)) {
                Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                Err(e) => return Err(e),
            }
            openat(parent, name, flags, Mode::empty())
        }
        other => other,
    }
}

/// Whether a folder is this user's and written by no one else.
fn private(stat: &FileStat) -> bool {
    stat.st_uid == me() && stat.st_mode & 0o022 == 0
}

/// The most links one path may lead through (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// The plain names and `..` of a path, in order (`.` and the root left out).
fn names(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// A walk down from `/`: each folder entered, held open and checked.
struct Walk {
    /// The folders entered, `/` first: descriptor, status and the path they were reached by.
    stack: Vec<(OwnedFd, FileStat, PathBuf)>,
}

/// What one name of a walk was.
enum Step {
    /// A folder, now the walk's last.
    Entered,
    /// A link, to be followed from the walk's last folder: its target.
    Link(PathBuf),
}

impl Walk {
    fn new() -> Result<Walk, String> {
        let root = PathBuf::from("/");
        let fd = openat(nix::fcntl::AT_FDCWD, "/", SEARCH, Mode::empty()).map_err(|e| format!("/: {e}"))?;
        let stat = fstat(&fd).map_err(|e| format!("/: {e}"))?;
        check_owner(&root, &stat)?;
        Ok(Walk { stack: vec![(fd, stat, root)] })
    }

    fn last(&self) -> &(OwnedFd, FileStat, PathBuf) {
        self.stack.last().expect("the walk holds /")
    }

    /// `..`: back to the folder the last one was entered from (`/` stays `/`).
    fn up(&mut self) {
        if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    fn back_to_root(&mut self) {
        self.stack.truncate(1);
    }

    /// Looks `name` up in the last folder: a link is read (never followed), a folder entered
    /// (made when missing). Either must belong to this user or root.
    fn step(&mut self, name: &OsString) -> Result<Step, String> {
        let (fd, stat, at) = self.last();
        let child = at.join(name);
        // An entry of a folder others may write to stays where it is only under the sticky
        // bit, and only when its owner is this user or root (checked below).
        if stat.st_mode & 0o022 != 0 && stat.st_mode & libc::S_ISVTX == 0 {
            return Err(format!(
                "{} is writable by other users (mode {:o}) and could be replaced",
                at.display(),
                stat.st_mode & 0o7777
            ));
        }
        if let Ok(entry) = fstatat(fd, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW) {
            if SFlag::from_bits_truncate(entry.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFLNK {
                check_owner(&child, &entry)
                    .map_err(|why| format!("{why}, and is a link it can point anywhere"))?;
                let target = nix::fcntl::readlinkat(fd, name.as_os_str())
                    .map_err(|e| format!("the link {} could not be read ({e})", child.display()))?;
                return Ok(Step::Link(PathBuf::from(target)));
            }
        }
        let opened = open_or_make(fd, name, SEARCH)
            .map_err(|e| format!("{} could not be made or opened as a folder ({e})", child.display()))?;
        let child_stat = fstat(&opened).map_err(|e| format!("{}: {e}", child.display()))?;
        check_owner(&child, &child_stat)?;
        self.stack.push((opened, child_stat, child));
        Ok(Step::Entered)
    }

    /// The last folder, to be used, when it is this user's and only this user can write to it.
    fn finish(self) -> Result<Dir, String> {
        let (fd, stat, at) = self.last();
        if !private(stat) {
            return Err(format!(
                "it is not a folder of this user that only this user can write to (owner {}, mode {:o})",
                stat.st_uid,
                stat.st_mode & 0o7777
            ));
        }
        let fd = openat(fd, ".", USE, Mode::empty()).map_err(|e| format!("{}: {e}", at.display()))?;
        Ok(Dir { fd: Arc::new(fd) })
    }
}

impl Dir {
    /// Opens the folder at `path` (creating what is missing, 0700) by walking it from `/` one
    /// component at a time, and checks that no other user can change where the walk leads; the
    /// error says what could.
    ///
    /// Links are followed by the walk itself, as the kernel would follow them, and each is
    /// checked as any entry of its folder: a link another user owns is refused (the kernel's
    /// `protected_symlinks` rule refuses the same in sticky folders), since its owner can point
    /// it anywhere at any time.
    pub fn open(path: &Path) -> Result<Dir, String> {
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map_err(|e| format!("the current folder is unknown ({e})"))?.join(path)
        };
        let mut walk = Walk::new()?;
        let mut pending: VecDeque<OsString> = names(&absolute);
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                walk.up();
                continue;
            }
            match walk.step(&name)? {
                Step::Entered => {}
                Step::Link(target) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(format!(
                            "{} leads through more than {MAX_LINKS} links",
                            absolute.display()
                        ));
                    }
                    if target.is_absolute() {
                        walk.back_to_root();
                    }
                    for name in names(&target).into_iter().rev() {
                        pending.push_front(name);
                    }
                }
            }
        }
        walk.finish()
    }

    /// The folder `name` in this one (created when missing), held open when it is this user's
    /// and written by no one else.
    pub fn sub(&self, name: &str) -> std::io::Result<Dir> {
        let fd = open_or_make(&self.fd, plain(name)?.as_ref(), USE)?;
        if !private(&fstat(&fd)?) {
            return Err(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "not a private folder"));
        }
        Ok(Dir { fd: Arc::new(fd) })
    }

    /// The file `name` mapped, when it is a regular file of this user of `len` bytes (any
    /// length when None).
    pub fn map(&self, name: &str, len: Option<u64>) -> Option<Arc<memmap2::Mmap>> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = openat(self.fd.as_fd(), plain(name).ok()?, flags, Mode::empty()).ok()?;
        let file = std::fs::File::from(fd);
        let meta = file.metadata().ok()?;
        use std::os::unix::fs::MetadataExt;
        if !meta.is_file() || meta.uid() != me() || len.is_some_and(|l| l != meta.len()) || meta.len() == 0 {
            return None;
        }
        // A private file of this user; files are replaced by rename, never rewritten in place.
        rperf_perfdata::mapped::map(&file).ok().map(Arc::new)
    }

    /// A new file to become `name`. What a process that is gone left half-written for the same
    /// name (it was killed while writing) is removed first.
    pub fn create(&self, name: &str) -> std::io::Result<NewFile> {
        let name = plain(name)?;
        self.remove_leftovers(name);
        let temp = format!(".{name}.{}", std::process::id());
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(self.fd.as_fd(), temp.as_str(), flags, Mode::from_bits_truncate(0o600))?;
        let out = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::from(fd));
        Ok(NewFile { out, dir: self.clone(), temp, name: name.to_owned(), written: 0, done: false })
    }

    /// The regular files of the folder: name, size and time of last change.
    pub fn files(&self) -> Vec<(String, u64, i64)> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let Ok(mut list) = nix::dir::Dir::openat(self.fd.as_fd(), ".", flags, Mode::empty()) else {
            return Vec::new();
        };
        list.iter()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_str().ok()?.to_owned();
                let stat = fstatat(self.fd.as_fd(), name.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
                let regular =
                    SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
                regular.then_some((name, stat.st_size as u64, stat.st_mtime))
            })
            .collect()
    }

    /// The size, time of last change and permission bits of the regular file `name`, not
    /// following a link.
    pub fn stat(&self, name: &str) -> Option<(u64, i64, u32)> {
        let stat = fstatat(self.fd.as_fd(), plain(name).ok()?, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        let regular = SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
        regular.then_some((stat.st_size as u64, stat.st_mtime, stat.st_mode & 0o7777))
    }

    /// Removes the file `name`.
    pub fn remove(&self, name: &str) -> bool {
        plain(name).is_ok_and(|n| unlinkat(self.fd.as_fd(), n, UnlinkatFlags::NoRemoveDir).is_ok())
    }

    /// Removes the files `.NAME.PID` that processes no longer running left.
    fn remove_leftovers(&self, name: &str) {
        let prefix = format!(".{name}.");
        for (file, _, _) in self.files() {
            let Some(pid) = file.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else { continue };
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                self.remove(&file);
            }
        }
    }

    /// Removes the oldest regular files until the rest take at most `limit` bytes.
    pub fn prune(&self, limit: u64) {
        let mut files = self.files();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort_by_key(|f| f.2);
        for (name, len, _) in files {
            if total <= limit {
                break;
            }
            if self.remove(&name) {
                total -= len;
            }
        }
    }
}

/// A cache file being written: it takes its name once complete (`finish`), and is removed
/// when dropped before.
pub struct NewFile {
    out: std::io::BufWriter<std::fs::File>,
    dir: Dir,
    temp: String,
    name: String,
    written: u64,
    done: bool,
}

impl NewFile {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// What was written so far, mapped (to check it before it takes its name).
    pub fn map_written(&mut self) -> std::io::Result<memmap2::Mmap> {
        self.out.flush()?;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(self.dir.fd.as_fd(), self.temp.as_str(), flags, Mode::empty())?;
        let file = std::fs::File::from(fd);
        if file.metadata()?.len() == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "nothing was written"));
        }
        rperf_perfdata::mapped::map(&file)
    }

    /// Sets the file's permission bits (0600 when made).
    pub fn set_mode(&mut self, mode: u32) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        self.out.get_ref().set_permissions(std::fs::Permissions::from_mode(mode))
    }

    /// Gives the file its name.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.out.flush()?;
        let fd = self.dir.fd.as_fd();
        renameat(fd, self.temp.as_str(), fd, self.name.as_str())?;
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
            self.dir.remove(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rperf-cache-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&d).ok();
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn files_go_where_the_checked_folder_went_not_where_its_path_leads_now() {
        let base = scratch("swap");
        let cache = base.join("cache");
        let dir = Dir::open(&cache).unwrap();
        // The folder is swapped for a link to another between the check and the writes.
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::rename(&cache, base.join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &cache).unwrap();
        let mut f = dir.create("kept").unwrap();
        f.write_all(b"bytes").unwrap();
        f.finish().unwrap();
        assert!(base.join("moved/kept").is_file());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(dir.map("kept", Some(5)).is_some());
        dir.prune(0);
        assert!(!base.join("moved/kept").exists());
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn a_folder_others_can_change_is_refused() {
        let base = scratch("open");
        let shared = base.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = Dir::open(&shared.join("cache")).unwrap_err();
        assert!(why.contains("writable by other users"), "{why}");
        assert!(!shared.join("cache").exists(), "nothing is made under a folder others can write to");
        // The sticky bit protects what this user owns there.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        Dir::open(&shared.join("cache")).unwrap();
        // A link anywhere on the path is not followed after the path was resolved, and a
        // folder writable by others is refused itself.
        std::fs::set_permissions(shared.join("cache"), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(Dir::open(&shared.join("cache")).unwrap_err().contains("only this user can write"));
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn links_on_the_path_are_walked_as_the_kernel_follows_them() {
        let base = scratch("links");
        std::fs::create_dir_all(base.join("real/deeper")).unwrap();
        // This user's links, absolute and relative, with `..` in the target.
        std::os::unix::fs::symlink(base.join("real"), base.join("abs")).unwrap();
        std::os::unix::fs::symlink("real/deeper/..", base.join("rel")).unwrap();
        let mut f = Dir::open(&base.join("abs/cache")).unwrap().create("a").unwrap();
        f.write_all(b"a").unwrap();
        f.finish().unwrap();
        assert!(base.join("real/cache/a").is_file());
        let mut f = Dir::open(&base.join("rel/cache")).unwrap().create("b").unwrap();
        f.write_all(b"b").unwrap();
        f.finish().unwrap();
        assert!(base.join("real/cache/b").is_file());
        // A loop of links ends the walk with a reason, not a hang.
        std::os::unix::fs::symlink(base.join("loop2"), base.join("loop1")).unwrap();
        std::os::unix::fs::symlink(base.join("loop1"), base.join("loop2")).unwrap();
        let why = Dir::open(&base.join("loop1/cache")).unwrap_err();
        assert!(why.contains("more than 40 links"), "{why}");
        // A link to a folder others can write to leads to that folder's check.
        std::fs::create_dir(base.join("open")).unwrap();
        std::fs::set_permissions(base.join("open"), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(base.join("open"), base.join("to-open")).unwrap();
        let why = Dir::open(&base.join("to-open/cache")).unwrap_err();
        assert!(why.contains("writable by other users"), "{why}");
        assert!(!base.join("open/cache").exists());
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn a_link_of_another_user_is_not_followed() {
        // Only root can give a link to another user; the test suite runs as root.
        if me() != 0 {
            eprintln!("skipped: giving a link to another user needs root");
            return;
        }
        let base = scratch("their-link");
        let sticky = base.join("tmp");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let target = base.join("roots");
        std::fs::create_dir(&target).unwrap();
        let link = sticky.join("cache");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            &link,
            Some(nix::unistd::Uid::from_raw(65534)),
            Some(nix::unistd::Gid::from_raw(65534)),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .unwrap();
        for path in [link.clone(), link.join("rperf")] {
            let why = Dir::open(&path).unwrap_err();
            assert!(why.contains("belongs to another user (uid 65534)") && why.contains("link"), "{why}");
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "nothing is made where the link leads");
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn what_a_killed_writer_left_is_removed_by_the_next() {
        let base = scratch("leftovers");
        let dir = Dir::open(&base.join("c")).unwrap();
        // pid_max is at most 2^22: no process has this pid.
        std::fs::write(base.join("c/.debuginfo.99999999"), "half").unwrap();
        // A running process's file is its own, still being written.
        std::fs::write(base.join("c/.debuginfo.1"), "busy").unwrap();
        let mut f = dir.create("debuginfo").unwrap();
        f.write_all(b"whole").unwrap();
        f.finish().unwrap();
        let mut left: Vec<_> = dir.files().into_iter().map(|f| f.0).collect();
        left.sort();
        assert_eq!(left, [".debuginfo.1", "debuginfo"]);
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn names_stay_inside_the_folder() {
        let base = scratch("names");
        let dir = Dir::open(&base.join("c")).unwrap();
        assert!(dir.create("../escape").is_err());
        assert!(dir.create("..").is_err());
        assert!(!dir.remove("../c"));
        std::fs::remove_dir_all(&base).ok();
    }
}
