//! The symbol files the GDB JIT interface reader copies (`jit_debug`), kept out of memory: each
//! is written, as its `RPERF_JIT_SYMFILES` entry, to an unnamed file in the temporary folder,
//! which becomes that section of the recording when it ends. Only their times and code ranges
//! stay in memory, so a process registering 100,000 symbol files costs the recorder a few
//! megabytes, not their size.
//!
//! What is copied is bounded: symbol files larger than `JitLimits::image` and those past
//! `JitLimits::total` in all are not kept, and counted; the summary says so.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use rperf_perfdata::sections::{encode_jit_symfile_head, JIT_SYMFILE_REMOVED_AT};
use rperf_perfdata::JitSymfile;

/// Bounds on what is copied of runtimes' symbol files (`--jit-max-image`, `--jit-max-total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JitLimits {
    /// The largest symbol file copied, in bytes.
    pub image: u64,
    /// The most bytes of symbol files copied in all, symbol maps and jitdumps included.
    pub total: u64,
    /// The largest symbol map (`/tmp/perf-PID.map`) or jitdump copied, in bytes.
    pub map: u64,
}

impl Default for JitLimits {
    fn default() -> JitLimits {
        JitLimits { image: 16 << 20, total: 256 << 20, map: 64 << 20 }
    }
}

/// The symbol files kept so far.
#[derive(Default)]
pub(crate) struct JitStore {
    limits: JitLimits,
    /// The section being built (made on first use).
    file: Option<File>,
    len: u64,
    /// Each kept file's times and code (its image is in `file`), and where its entry starts.
    kept: Vec<(JitSymfile, u64)>,
    /// Images kept since the last `take_fresh`, for unwinding through their code, when asked.
    keep_fresh: bool,
    fresh: Vec<JitSymfile>,
    /// Bytes of images kept.
    bytes: u64,
    /// Symbol files not kept: larger than the limit, past the total, still waiting to be
    /// copied when their process exited or recording ended; and their bytes.
    pub too_large: u64,
    pub over_total: u64,
    pub not_read: u64,
    pub skipped_bytes: u64,
    /// A list was not walked to its end before its process exited or recording ended: its
    /// other entries were never seen.
    pub unwalked: bool,
    /// Why the section could not be written, once.
    pub error: Option<String>,
}

impl JitStore {
    pub fn new(limits: JitLimits) -> JitStore {
        JitStore { limits, ..Default::default() }
    }

    /// Keeps the images added from now on for `take_fresh` too.
    pub fn keep_fresh(&mut self) {
        self.keep_fresh = true;
    }

    /// Whether a symbol file of `size` bytes is to be copied; one that is not is counted.
    pub fn admits(&mut self, size: u64) -> bool {
        let refuse = if size > self.limits.image {
            &mut self.too_large
        } else if self.bytes.saturating_add(size) > self.limits.total {
            &mut self.over_total
        } else {
            return true;
        };
        *refuse += 1;
        self.skipped_bytes = self.skipped_bytes.saturating_add(size);
        false
    }

    /// Bytes of symbol files kept.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Symbol files of these sizes were still waiting to be copied when their process exited or
    /// recording ended.
    pub fn unread(&mut self, sizes: impl Iterator<Item = u64>) {
        for size in sizes {
            self.not_read += 1;
            self.skipped_bytes = self.skipped_bytes.saturating_add(size);
        }
    }

    /// Keeps `f` (its image included); returns its index, or None when it could not be written.
    pub fn add(&mut self, mut f: JitSymfile) -> Option<usize> {
        let at = self.len;
        let head = encode_jit_symfile_head(&f, f.image.len() as u64);
        let written = self.file().and_then(|file| {
            file.write_all_at(&head, at)?;
            file.write_all_at(&f.image, at + head.len() as u64)
        });
        if let Err(e) = written {
            self.error.get_or_insert_with(|| {
                format!(
                    "JIT symbol files could not be kept in {} ({e}); those of the rest of the recording are \
                     left out (set TMPDIR to a folder with room)",
                    std::env::temp_dir().display()
                )
            });
            return None;
        }
        self.len = at + head.len() as u64 + f.image.len() as u64;
        self.bytes += f.image.len() as u64;
        let image = std::mem::take(&mut f.image);
        if self.keep_fresh {
            self.fresh.push(JitSymfile { image, ..f.clone() });
        }
        self.kept.push((f, at));
        Some(self.kept.len() - 1)
    }

    fn file(&mut self) -> std::io::Result<&File> {
        if self.file.is_none() {
            self.file = Some(crate::writer::unnamed_file()?);
        }
        Ok(self.file.as_ref().expect("made above"))
    }

    /// Kept file `i` was seen unregistered at `ns` (its earliest sighting counts).
    pub fn removed(&mut self, i: usize, ns: u64) {
        let Some((meta, at)) = self.kept.get_mut(i) else { return };
        if ns >= meta.removed_ns {
            return;
        }
        meta.removed_ns = ns;
        if let Some(f) = &self.file {
            f.write_all_at(&ns.to_le_bytes(), *at + JIT_SYMFILE_REMOVED_AT).ok();
        }
    }

    /// Kept file `i`'s times and code (without its image).
    #[cfg(test)]
    pub fn get(&self, i: usize) -> &JitSymfile {
        &self.kept[i].0
    }

    /// How many are kept.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// The images kept since the last call.
    pub fn take_fresh(&mut self) -> Vec<JitSymfile> {
        std::mem::take(&mut self.fresh)
    }

    /// The `RPERF_JIT_SYMFILES` section: the file holding it and its length.
    pub fn section(&mut self) -> Option<(File, u64)> {
        let file = self.file.take()?;
        let mut f = file;
        f.flush().ok()?;
        (self.len > 0).then_some((f, self.len))
    }

    /// What was left out, for the user.
    pub fn summary(&self) -> Option<String> {
        let left_out = self.too_large + self.over_total + self.not_read;
        if left_out == 0 && !self.unwalked {
            return None;
        }
        let mut why = Vec::new();
        if self.too_large > 0 {
            why.push(format!("{} larger than {} (--jit-max-image)", self.too_large, size(self.limits.image)));
        }
        if self.over_total > 0 {
            why.push(format!(
                "{} past {} in all (--jit-max-total)",
                self.over_total,
                size(self.limits.total)
            ));
        }
        if self.not_read > 0 {
            why.push(format!(
                "{} still waiting to be read when their process exited or recording ended",
                self.not_read
            ));
        }
        if self.unwalked {
            why.push("and a list too long to walk before its process exited or recording ended was not read to its end".into());
        }
        Some(format!(
            "{left_out} JIT symbol files ({}) were not kept: {}; their code stays unnamed",
            size(self.skipped_bytes),
            why.join(", ")
        ))
    }
}

/// `bytes` for people: `16 MiB`, `1.5 GiB`, `900 B`.
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
