//! Finding the binary for a recorded path: the path itself, or under a symbol directory by
//! path, by basename, or through a `build_id_list` file (`build_id=relative/path` lines, the
//! layout of simpleperf's binary cache). Build ids are checked when both sides have one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a binary was found, or why it was not used.
pub enum Found {
    /// A file whose build id matches (or could not be compared).
    File(PathBuf),
    /// A library stored in an APK, found in the APK file.
    Embedded {
        /// The APK file.
        apk: PathBuf,
        /// The library in it.
        entry: crate::apk::Entry,
    },
    /// Fetched from a debuginfod server by build id.
    Fetched(crate::debuginfod::Fetched),
    /// Candidates existed but had another build id.
    BuildIdMismatch(PathBuf),
    /// Nothing found.
    Missing,
}

/// Looks binaries up under an optional symbol directory.
pub struct BinaryFinder {
    symfs: Vec<PathBuf>,
    by_build_id: HashMap<String, PathBuf>,
    recorded_vdso: Option<Vec<u8>>,
    /// The recording was made on the running kernel, so this machine's vDSO is the one it
    /// ran, even without a build id to compare.
    same_kernel: bool,
    /// Where files missing here are fetched from, when anywhere.
    debuginfod: Option<crate::debuginfod::Client>,
    /// What was fetched, by build id (hex) and kind.
    fetched: HashMap<(String, crate::debuginfod::Artifact), crate::debuginfod::Fetched>,
}

impl BinaryFinder {
    /// A finder for the symbol directories `symfs`, searched in order (none: binaries are read
    /// at their recorded paths).
    pub fn new(symfs: &[PathBuf]) -> BinaryFinder {
        let mut by_build_id = HashMap::new();
        for dir in symfs {
            if let Ok(list) = std::fs::read_to_string(dir.join("build_id_list")) {
                for line in list.lines() {
                    if let Some((id, rel)) = line.split_once('=') {
                        let id = id.trim().trim_start_matches("0x").to_ascii_lowercase();
                        if let Some(p) = inside(dir, Path::new(rel.trim())) {
                            by_build_id.entry(id).or_insert(p);
                        }
                    }
                }
            }
        }
        BinaryFinder {
            symfs: symfs.to_vec(),
            by_build_id,
            recorded_vdso: None,
            same_kernel: false,
            debuginfod: None,
            fetched: HashMap::new(),
        }
    }

    /// A copy that finds what this finder finds on this machine, and fetches nothing: for
    /// loading binaries on another thread.
    pub fn local_copy(&self) -> BinaryFinder {
        BinaryFinder {
            symfs: self.symfs.clone(),
            by_build_id: self.by_build_id.clone(),
            recorded_vdso: self.recorded_vdso.clone(),
            same_kernel: self.same_kernel,
            debuginfod: None,
            fetched: HashMap::new(),
        }
    }

    /// Also finds binaries by build id anywhere under `dirs` (searched recursively, links not
    /// followed): `--symdir`. Files named by the symbol directories' build_id_lists come first.
    pub fn add_symdirs(&mut self, dirs: &[PathBuf]) {
        for (id, path) in crate::symdir::index(dirs) {
            self.by_build_id.entry(id).or_insert(path);
        }
    }

    /// Finds the binary recorded as `path` with `build_id`; a library recorded inside an APK
    /// (`X.apk!/lib/abi/libfoo.so`) is also looked for in the APK.
    pub fn find(&self, path: &str, build_id: Option<&[u8]>) -> Found {
        let found = self.find_file(path, build_id);
        if matches!(found, Found::File(_)) {
            return found;
        }
        let found = match self.fetched(build_id, crate::debuginfod::Artifact::Executable) {
            Some(f) => return Found::Fetched(f.clone()),
            None => found,
        };
        let Some((apk, name)) = crate::apk::split(path) else { return found };
        let mut mismatch = None;
        for apk in self.candidates(apk, None).into_iter().filter(|c| c.is_file()) {
            let Some(entry) =
                crate::apk::stored_entries(&apk).and_then(|e| e.into_iter().find(|e| e.name == name))
            else {
                continue;
            };
            let want = build_id.filter(|b| b.iter().any(|x| *x != 0));
            let have = want.and_then(|_| crate::buildid::of_file_range(&apk, entry.offset, entry.size));
            match (want, have) {
                (Some(want), Some(have)) if !crate::buildid::same(want, &have) => {
                    mismatch.get_or_insert(apk);
                }
                _ => return Found::Embedded { apk, entry },
            }
        }
        match (found, mismatch) {
            (Found::BuildIdMismatch(p), _) | (Found::Missing, Some(p)) => Found::BuildIdMismatch(p),
            _ => Found::Missing,
        }
    }

    /// The entries stored uncompressed in the APK recorded as `path`, from the APK under the
    /// symbol directory or at its recorded path.
    pub fn apk_entries(&self, path: &str) -> Option<Vec<crate::apk::Entry>> {
        self.candidates(path, None)
            .into_iter()
            .filter(|c| c.is_file())
            .find_map(|c| crate::apk::stored_entries(&c))
    }

    /// Where a binary recorded as `path` may be, in order: by build id through the symbol
    /// directories' `build_id_list`s, under each symbol directory by path and by file name,
    /// else (without symbol directories) the recorded path itself.
    fn candidates(&self, path: &str, build_id: Option<&[u8]>) -> Vec<PathBuf> {
        let mut candidates = Vec::new();
        if let Some(id) = build_id.filter(|b| !b.is_empty()) {
            let key = crate::buildid::hex(id);
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
        // Under a symbol directory, nothing outside it is opened; without one, the recorded
        // path is, when it is absolute (a relative one would be opened from the current
        // folder: `../../etc/shadow`).
        for dir in &self.symfs {
            candidates.extend(inside(dir, Path::new(path)));
            if let Some(base) = Path::new(path).file_name() {
                candidates.extend(inside(dir, Path::new(base)));
            }
        }
        if self.symfs.is_empty() && Path::new(path).is_absolute() {
            candidates.push(PathBuf::from(path));
        }
        candidates
    }

    fn find_file(&self, path: &str, build_id: Option<&[u8]>) -> Found {
        let mut mismatch = None;
        for c in self.candidates(path, build_id) {
            if !c.is_file() {
                continue;
            }
            match (build_id.filter(|b| b.iter().any(|x| *x != 0)), crate::buildid::of_file(&c)) {
                (Some(want), Some(have)) if !crate::buildid::same(want, &have) => {
                    mismatch.get_or_insert(c);
                }
                _ => return Found::File(c),
            }
        }
        mismatch.map_or(Found::Missing, Found::BuildIdMismatch)
    }
}

/// `rel` (a recorded path, or a name from a file) under `root`, when it stays inside it: no
/// `..` component, and no symbolic link on the way that leads out of the root. Absolute paths
/// count from the root. None for a path that would leave it; a path that does not exist (yet)
/// is returned as joined, since nothing can lead out through it.
pub fn inside(root: &Path, rel: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = root.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => return None,
        }
    }
    match (out.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(real_root)) => real.starts_with(&real_root).then_some(out),
        (Err(_), _) => Some(out),
        (Ok(_), Err(_)) => None,
    }
}

impl BinaryFinder {
    /// Fetches files missing here from debuginfod servers through `client`.
    pub fn use_debuginfod(&mut self, client: crate::debuginfod::Client) {
        self.debuginfod = Some(client);
    }

    /// The debuginfod client, when files are fetched.
    pub fn debuginfod(&self) -> Option<&crate::debuginfod::Client> {
        self.debuginfod.as_ref()
    }

    /// Fetches `wanted` (those not fetched before), side by side; `find` and `fetched` then
    /// give what came.
    pub fn fetch(&mut self, wanted: Vec<crate::debuginfod::Want>) {
        let Some(client) = &self.debuginfod else { return };
        let wanted: Vec<_> = wanted
            .into_iter()
            .filter(|w| !self.fetched.contains_key(&(crate::buildid::hex(&w.build_id), w.artifact)))
            .collect();
        if !wanted.is_empty() {
            self.fetched.extend(client.fetch_all(&wanted));
        }
    }

    /// The file of `artifact` fetched for `build_id`.
    pub fn fetched(
        &self,
        build_id: Option<&[u8]>,
        artifact: crate::debuginfod::Artifact,
    ) -> Option<&crate::debuginfod::Fetched> {
        let id = build_id.filter(|b| b.iter().any(|x| *x != 0))?;
        self.fetched.get(&(crate::buildid::hex(id), artifact))
    }

    /// Folders searched for separate debug files before the system's: the symbol directories.
    pub fn debug_roots(&self) -> Vec<PathBuf> {
        self.symfs.clone()
    }

    /// Says whether the recording was made on the running kernel.
    pub fn set_same_kernel(&mut self, same: bool) {
        self.same_kernel = same;
    }

    /// Uses the vDSO image a recording kept.
    pub fn set_recorded_vdso(&mut self, image: Vec<u8>) {
        self.recorded_vdso = Some(image);
    }

    /// The vDSO image with `build_id`: the recording's copy, perf's build-id cache
    /// (`~/.debug/[vdso]/ID/vdso`), else this machine's own vDSO when its build id matches, or
    /// when none was recorded and the recording was made on this kernel (another machine's
    /// vDSO, of another architecture perhaps, would name its code wrongly).
    pub fn find_vdso(&self, build_id: Option<&[u8]>) -> Option<Vec<u8>> {
        let want = build_id.filter(|b| b.iter().any(|x| *x != 0));
        if let Some(image) = &self.recorded_vdso {
            return Some(image.clone());
        }
        if let (Some(id), Some(home)) = (want, std::env::var_os("HOME")) {
            let cached = Path::new(&home).join(".debug/[vdso]").join(crate::buildid::hex(id)).join("vdso");
            if let Ok(image) = std::fs::read(cached) {
                return Some(image);
            }
        }
        let image = running_vdso()?;
        match (want, crate::buildid::of_image(&image)) {
            (Some(want), Some(have)) => crate::buildid::same(want, &have).then_some(image),
            (Some(_), None) | (None, _) => self.same_kernel.then_some(image),
        }
    }
}

/// The vDSO the kernel maps into this process (the same image in every process of this boot),
/// read from this process's memory.
pub fn running_vdso() -> Option<Vec<u8>> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.trim_end().ends_with("[vdso]"))?;
    let (start, end) = line.split_once(' ')?.0.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    if end <= start || end - start > 1 << 20 {
        return None;
    }
    let mut image = vec![0; end - start];
    let mem = std::fs::File::open("/proc/self/mem").ok()?;
    std::os::unix::fs::FileExt::read_exact_at(&mem, &mut image, start as u64).ok()?;
    Some(image)
}

#[cfg(test)]
mod tests {
    #[test]
    fn lookups_stay_inside_the_root() {
        use std::path::Path;
        let root = std::env::temp_dir().join(format!("rperf-inside-{}", std::process::id()));
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/a.so"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        std::os::unix::fs::symlink("lib/a.so", root.join("in.so")).unwrap();
        assert_eq!(super::inside(&root, Path::new("/lib/a.so")), Some(root.join("lib/a.so")));
        assert_eq!(super::inside(&root, Path::new("/lib/../../etc/shadow")), None);
        assert_eq!(super::inside(&root, Path::new("out/passwd")), None);
        assert_eq!(super::inside(&root, Path::new("in.so")), Some(root.join("in.so")));
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A recording names any path it likes: under --symfs nothing outside the folder is
    /// opened, and a relative path is never opened from the current folder.
    #[test]
    fn recorded_paths_outside_the_symbol_directory_are_not_opened() {
        use super::{BinaryFinder, Found};
        let root = std::env::temp_dir().join(format!("rperf-symfs-only-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let outside = std::env::temp_dir().join(format!("rperf-symfs-outside-{}", std::process::id()));
        std::fs::write(&outside, b"secret").unwrap();
        let under = BinaryFinder::new(std::slice::from_ref(&root));
        assert!(matches!(under.find(outside.to_str().unwrap(), None), Found::Missing));
        // Tests run in the crate's folder, where this relative path names a file.
        assert!(std::path::Path::new("src/lib.rs").is_file());
        assert!(matches!(under.find("../symbols/src/lib.rs", None), Found::Missing));
        assert!(matches!(BinaryFinder::new(&[]).find("src/lib.rs", None), Found::Missing));
        assert!(matches!(BinaryFinder::new(&[]).find(outside.to_str().unwrap(), None), Found::File(_)));
        std::fs::remove_dir_all(&root).ok();
        std::fs::remove_file(&outside).ok();
    }

    #[test]
    fn the_running_vdso_is_an_elf_image_with_a_build_id() {
        let image = super::running_vdso().expect("a [vdso] mapping");
        assert_eq!(&image[..4], b"\x7fELF");
        assert!(crate::buildid::of_image(&image).is_some_and(|id| !id.is_empty()));
    }
}
