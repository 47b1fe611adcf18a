//! A report's `-o FILE`: written under a name of its own beside FILE and given FILE's name only
//! when the report is complete, so that a failed report leaves no broken file and never
//! writes through a symbolic link. A FIFO or character device named by `-o` is written to
//! directly; anything else that is not a regular file or a link is refused.

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
                return Ok(OutputFile { file, temp: None, path: path.to_path_buf() });
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
        Ok(OutputFile { file, temp: Some(temp), path: path.to_path_buf() })
    }

    /// The file to write the report to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Gives the complete report its name (a file or link there is replaced, not written
    /// through).
    pub fn finish(mut self) -> anyhow::Result<()> {
        if let Some(temp) = self.temp.take() {
            std::fs::rename(&temp, &self.path)
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        Ok(())
    }
}

impl Drop for OutputFile {
    /// A report that did not finish leaves nothing behind.
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            std::fs::remove_file(temp).ok();
        }
    }
}
