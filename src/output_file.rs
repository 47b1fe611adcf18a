//! An output file (`-o FILE`): written under a name of its own beside FILE and given FILE's name
//! only when complete, so that a failure leaves no broken file and nothing is ever written
//! through a symbolic link. A report replaces what was there; a recording moves it to
//! `FILE.old`, as `rperf record` does, and is readable by its owner only. A FIFO or character
//! device named by a report's `-o` is written to directly; anything else that is not a regular
//! file or a link is refused.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The file being written, until `finish` names it.
pub struct OutputFile {
    file: File,
    /// The name it is being written under, for a regular file.
    temp: Option<PathBuf>,
    path: PathBuf,
    /// A recording: what was at `path` moves to `path.old`.
    recording: bool,
}

impl OutputFile {
    /// Opens what will be `path`.
    pub fn create(path: &Path) -> anyhow::Result<OutputFile> {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            let t = meta.file_type();
            if t.is_fifo() || t.is_char_device() {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                return Ok(OutputFile { file, temp: None, path: path.to_path_buf(), recording: false });
            }
            if !(t.is_file() || t.is_symlink()) {
                bail!("cannot write {}: it is not a regular file; give -o a file name", path.display());
            }
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = path.with_file_name(format!(".{name}.rperf-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(OutputFile { file, temp: Some(temp), path: path.to_path_buf(), recording: false })
    }

    /// Opens `path` to be written as it goes (`stat -o`, read while intervals are written): a
    /// regular file, created or truncated, a FIFO or a character device; never through a link.
    pub fn direct(path: &Path) -> anyhow::Result<File> {
        let refuse = |what: &str| {
            anyhow::anyhow!("cannot write {}: it is {what}, which rperf never writes through or replaces; give -o a file name", path.display())
        };
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            let t = meta.file_type();
            if t.is_symlink() {
                return Err(refuse("a symbolic link"));
            }
            if !(t.is_file() || t.is_fifo() || t.is_char_device()) {
                return Err(refuse("not a regular file"));
            }
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        // What was opened, not what the path named a moment before.
        let t = file.metadata().with_context(|| format!("cannot write {}", path.display()))?.file_type();
        if !(t.is_file() || t.is_fifo() || t.is_char_device()) {
            return Err(refuse("not a regular file"));
        }
        Ok(file)
    }

    /// Opens what will be the recording `path`, as `rperf record` makes one (0600, beside it).
    pub fn recording(path: &Path) -> anyhow::Result<OutputFile> {
        let (file, temp) = rperf_record::writer::create_beside(path)?;
        Ok(OutputFile { file, temp: Some(temp), path: path.to_path_buf(), recording: true })
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.file.metadata().map_or(true, |m| m.len() == 0)
    }

    /// The file to write the report to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the complete file its name (a file or link there is replaced, or for a recording
    /// moved to NAME.old; never written through).
    pub fn finish(mut self) -> anyhow::Result<()> {
        let Some(temp) = self.temp.take() else { return Ok(()) };
        let bytes = std::fs::metadata(&temp).map_or(0, |m| m.len());
        if self.recording {
            rperf_record::writer::publish_as(&temp, &self.path)?;
        } else {
            std::fs::rename(&temp, &self.path)
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        // A report's output, said as a recording is (recordings say so where they are made).
        if !self.recording {
            let path = rperf_symbols::text::printable(&self.path.to_string_lossy()).into_owned();
            let size = match bytes {
                b if b < 100_000 => format!("{:.1} KB", b as f64 / 1e3),
                b => format!("{:.1} MB", b as f64 / 1e6),
            };
            crate::log::say(crate::log::Level::Info, &format!("rperf: wrote {path} ({size})"));
        }
        Ok(())
    }
}

impl Drop for OutputFile {
    /// An output that did not finish leaves nothing behind.
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            std::fs::remove_file(temp).ok();
        }
    }
}
