//! Writing perf.data (the `PERFILE2` format that Linux perf, hotspot and samply read).
//!
//! Layout: the 104-byte file header; a reserved region for the event attributes and their ids;
//! the data section; then the feature-section index followed by the feature contents. The header
//! is written first and rewritten at every flush, so a recording cut short (SIGKILL, power loss,
//! full disk) stays readable up to its last flushed record.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rperf_perfdata::encode::{event_desc_feature, put_header, put_u64, EventDesc};
use rperf_perfdata::feature;
use rperf_perfdata::header::{FileHeader, HEADER_SIZE};

use rustc_hash::FxHashSet;

use crate::round::Round;
use crate::short_lived;
use crate::Error;

/// Room for attributes and ids at the front of the file; ids beyond it move the attribute
/// section behind the features at finish time.
const ATTR_RESERVE: u64 = 64 * 1024;
const FLUSH_AT: usize = 1 << 20;
/// A round (one pass over the rings: 2 s of side-band records system-wide) is written, in
/// time order, in parts: one each time it has copied this many bytes (records left in their
/// rings are not copied), so that what the writer holds stays bounded however busy the
/// machine. Readers sort a round's records.
const ROUND_PART: usize = FLUSH_AT;

/// One event attribute as stored in the file.
#[derive(Clone, Debug)]
pub struct FileAttr {
    /// The attribute bytes (`sys::attr_bytes`).
    pub attr: Vec<u8>,
    /// Sample ids that belong to this attribute.
    pub ids: Vec<u64>,
    /// Event name for HEADER_EVENT_DESC.
    pub name: String,
}

/// A feature section's content: bytes, or the first bytes of a file (a section too large to
/// hold in memory, copied into the recording when it ends).
pub enum Feature {
    /// The content.
    Bytes(Vec<u8>),
    /// A file holding the content, and its length.
    File(File, u64),
}

impl Feature {
    fn len(&self) -> u64 {
        match self {
            Feature::Bytes(b) => b.len() as u64,
            Feature::File(_, len) => *len,
        }
    }
}

/// Streams records into a perf.data file.
pub struct PerfDataWriter {
    file: File,
    /// Where the file is now: a new name beside the output until `publish`.
    path: PathBuf,
    /// A FIFO or character device given as the output: the recording is made in an unnamed
    /// file (the header is rewritten as it grows) and copied to it when it ends.
    stream: Option<File>,
    /// The output path, once published.
    output: PathBuf,
    published: bool,
    /// Samples in the buffer, and samples in the file.
    buffered_samples: u64,
    written_samples: u64,
    data_offset: u64,
    data_size: u64,
    buf: Vec<u8>,
    attrs_at_front: Option<(u64, u64)>,
    /// Records were written since the last round marker.
    in_round: bool,
    /// The records of this round, written in time order when it ends.
    round: Round,
    /// The times of the first and the last sample written.
    sample_times: Option<(u64, u64)>,
}

impl PerfDataWriter {
    /// Creates a new file beside `path` and writes a valid, empty recording with the given
    /// attributes. The file is made by `create_beside`. It takes `path`'s name at `publish`;
    /// until then an existing recording there is untouched, and dropping the writer removes
    /// the new file.
    ///
    /// A FIFO or character device at `path` is written to when the recording ends, never
    /// moved or replaced.
    pub fn create(path: &Path, attrs: &[FileAttr]) -> Result<PerfDataWriter, Error> {
        use std::os::unix::fs::FileTypeExt;
        let kind = std::fs::symlink_metadata(path).map(|m| m.file_type()).ok();
        if kind.is_some_and(|k| k.is_dir()) {
            let e = io::Error::other("it is a directory; give a file name with -o");
            return Err(Error::file(path, e));
        }
        // A link to a device or FIFO (`/dev/stdout`) is neither written through nor moved aside.
        let target = std::fs::metadata(path).map(|m| m.file_type()).ok();
        if kind.is_some_and(|k| k.is_symlink())
            && target
                .is_some_and(|t| t.is_fifo() || t.is_char_device() || t.is_block_device() || t.is_socket())
        {
            let e = io::Error::other(
                "it is a symbolic link to a device or FIFO, which rperf neither writes through nor moves; give the device's or FIFO's own path",
            );
            return Err(Error::file(path, e));
        }
        if kind.is_some_and(|k| k.is_fifo() || k.is_char_device()) {
            let (out, file) = open_stream(path)?;
            let mut w = Self::start(file, path.to_path_buf(), path, true, attrs)?;
            w.stream = Some(out);
            return Ok(w);
        }
        let (file, temp) = create_beside(path)?;
        Self::start(file, temp, path, false, attrs)
    }

    /// Writes the recording into `file`, an open file that already has its name (`name`, for
    /// messages): a parent process created it, securely, where this one may not create files.
    /// What it held is replaced.
    pub fn create_in(file: File, name: &Path, attrs: &[FileAttr]) -> Result<PerfDataWriter, Error> {
        file.set_len(0).map_err(|e| Error::file(name, e))?;
        Self::start(file, name.to_path_buf(), name, true, attrs)
    }

    fn start(
        file: File,
        path: PathBuf,
        output: &Path,
        published: bool,
        attrs: &[FileAttr],
    ) -> Result<PerfDataWriter, Error> {
        // Held until the recorder exits: a report of the file meanwhile can tell it is still
        // being written rather than cut short (`flock`, advisory; a failure changes nothing).
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX | libc::LOCK_NB) };
        let mut w = PerfDataWriter {
            file,
            path,
            stream: None,
            output: output.to_path_buf(),
            published,
            buffered_samples: 0,
            written_samples: 0,
            data_offset: HEADER_SIZE + ATTR_RESERVE,
            data_size: 0,
            buf: Vec::with_capacity(FLUSH_AT * 2),
            attrs_at_front: None,
            in_round: false,
            round: Round::default(),
            sample_times: None,
        };
        w.write_front_attrs(attrs)?;
        w.write_header(&[])?;
        Ok(w)
    }

    /// Gives the recording its name, once it has really started (see `publish_as`).
    pub fn publish(&mut self) -> Result<(), Error> {
        if self.published {
            return Ok(());
        }
        publish_as(&self.path, &self.output)?;
        self.path = self.output.clone();
        self.published = true;
        Ok(())
    }

    /// Samples the file holds (flushed to it).
    pub fn samples_written(&self) -> u64 {
        self.written_samples
    }

    /// Bytes of records written so far (flushed or buffered).
    pub fn data_len(&self) -> u64 {
        self.data_size + self.buf.len() as u64
    }

    /// Appends one record after everything written so far, outside the rounds' time order,
    /// and returns where it starts in the data section, for `patch`.
    pub fn write_record_placed(&mut self, record: &[u8]) -> Result<u64, Error> {
        self.write_round()?;
        let at = self.data_len();
        self.buf.extend_from_slice(record);
        Ok(at)
    }

    /// Overwrites bytes of a record written before, at `at` in the data section (a value
    /// known only later: the end of the kernel's code).
    pub fn patch(&mut self, at: u64, bytes: &[u8]) -> Result<(), Error> {
        // Buffers are written whole, so a record lies either in the file or in the buffer.
        if at >= self.data_size {
            let from = (at - self.data_size) as usize;
            if let Some(b) = self.buf.get_mut(from..from + bytes.len()) {
                b.copy_from_slice(bytes);
            }
            return Ok(());
        }
        self.file.write_all_at(bytes, self.data_offset + at).map_err(|e| Error::file(&self.output, e))
    }

    /// Updates the attributes stored at the front (e.g. ids of events opened later).
    pub fn update_attrs(&mut self, attrs: &[FileAttr]) -> Result<(), Error> {
        self.write_front_attrs(attrs)?;
        self.write_header(&[])
    }

    fn write_front_attrs(&mut self, attrs: &[FileAttr]) -> Result<(), Error> {
        let (bytes, fits) = encode_attrs(attrs, HEADER_SIZE, ATTR_RESERVE);
        if fits {
            self.file.write_all_at(&bytes, HEADER_SIZE).map_err(|e| Error::file(&self.path, e))?;
            self.attrs_at_front = Some((HEADER_SIZE, attr_section_len(attrs)));
        }
        Ok(())
    }

    /// The times of the first and the last sample written.
    pub fn sample_times(&self) -> Option<(u64, u64)> {
        self.sample_times
    }

    /// Appends one record (header included) at the place of the latest one.
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        self.write_record_at(record, None)
    }

    /// Appends one record (header included) taken at `time`: written in time order with the
    /// rest of its round.
    pub fn write_record_at(&mut self, record: &[u8], time: Option<u64>) -> Result<(), Error> {
        self.note_record(record, time);
        self.round.copy(record, time);
        if self.round_full() && !self.round.holds_ring_records() {
            self.write_round()?;
        }
        Ok(())
    }

    /// Adds to the round the record `record`, which lies at `at` in the data of ring buffer
    /// `ring` and stays there until the round is written (`write_round_from`, given that
    /// data).
    pub(crate) fn place_record(&mut self, ring: u32, at: usize, record: &[u8], time: Option<u64>) {
        self.note_record(record, time);
        self.round.place(ring, at, record.len(), time);
    }

    /// Whether the round has copied as much as it holds at once: it is to be written
    /// (`write_round_from`).
    pub(crate) fn round_full(&self) -> bool {
        self.round.copied_len() >= ROUND_PART
    }

    fn note_record(&mut self, record: &[u8], time: Option<u64>) {
        self.in_round = true;
        if let (Some(t), true) = (time, is_sample(record)) {
            let (first, last) = self.sample_times.get_or_insert((t, t));
            (*first, *last) = ((*first).min(t), (*last).max(t));
        }
    }

    fn write_round(&mut self) -> Result<(), Error> {
        debug_assert!(!self.round.holds_ring_records(), "ring records are written with their rings");
        self.write_round_from(&[], &FxHashSet::default())
    }

    /// Moves the round's records, sorted by time (records of one time in the order they
    /// came), into the output buffer, leaving out the task records of the processes in
    /// `left_out` (see `short_lived`); `rings` is the data of the ring buffers records were
    /// placed in.
    pub(crate) fn write_round_from(
        &mut self,
        rings: &[&[u8]],
        left_out: &FxHashSet<u32>,
    ) -> Result<(), Error> {
        if self.round.is_empty() {
            return Ok(());
        }
        let mut round = std::mem::take(&mut self.round);
        if left_out.is_empty() {
            if let Some(samples) = round.swap_if_in_order(&mut self.buf, is_sample) {
                self.buffered_samples += samples;
            }
        }
        let result = round.write(rings, |rec| {
            if !left_out.is_empty() && short_lived::is_left_out(rec, left_out) {
                return Ok(());
            }
            self.buf.extend_from_slice(rec);
            self.buffered_samples += u64::from(is_sample(rec));
            if self.buf.len() >= FLUSH_AT {
                self.write_buf()?;
            }
            Ok(())
        });
        self.round = round;
        result
    }

    /// Appends a FINISHED_ROUND record, which tells readers that every record before it may be
    /// sorted and processed, and flushes, so that a crash loses at most the current round.
    pub fn finish_round(&mut self) -> Result<(), Error> {
        // A round without records needs no marker (the loop wakes every millisecond while
        // waiting for an app).
        if !std::mem::take(&mut self.in_round) {
            return Ok(());
        }
        self.write_round()?;
        let mut r = Vec::with_capacity(8);
        put_header(&mut r, rperf_perfdata::encode::FINISHED_ROUND, 0, 8);
        self.buf.extend_from_slice(&r);
        self.in_round = false;
        self.flush()
    }

    /// Writes buffered records (the round's too) and makes the header cover them.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.write_round()?;
        self.write_buf()
    }

    /// Writes the output buffer and makes the header cover it.
    fn write_buf(&mut self) -> Result<(), Error> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all_at(&self.buf, self.data_offset + self.data_size);
        match result {
            Ok(()) => {
                self.data_size += self.buf.len() as u64;
                self.buf.clear();
                self.written_samples += std::mem::take(&mut self.buffered_samples);
                self.write_header(&[])
            }
            Err(e) => {
                // Keep what fits: write whole records one by one until the disk refuses, so the
                // file ends on a record boundary and the header covers every complete record.
                let buf = std::mem::take(&mut self.buf);
                let mut at = 0;
                while at + 8 <= buf.len() {
                    let size = u16::from_le_bytes([buf[at + 6], buf[at + 7]]) as usize;
                    if size < 8 || at + size > buf.len() {
                        break;
                    }
                    let rec = &buf[at..at + size];
                    if self.file.write_all_at(rec, self.data_offset + self.data_size).is_err() {
                        break;
                    }
                    self.data_size += size as u64;
                    self.written_samples += u64::from(is_sample(rec));
                    at += size;
                }
                self.buffered_samples = 0;
                self.write_header(&[]).ok();
                Err(Error::file(&self.path, e))
            }
        }
    }

    fn write_header(&mut self, features: &[u32]) -> Result<(), Error> {
        let (attr_off, attr_len) = self.attrs_at_front.unwrap_or((HEADER_SIZE, 0));
        let h = FileHeader {
            attr_size: crate::sys::FILE_ATTR_SIZE as u64 + 16,
            attrs: (attr_off, attr_len),
            data: (self.data_offset, self.data_size),
            event_types: (0, 0),
            features: features.to_vec(),
        };
        self.file.write_all_at(&h.encode(), 0).map_err(|e| Error::file(&self.path, e))
    }

    /// Writes the feature sections and the final attributes, and closes the file.
    pub fn finish(&mut self, attrs: &[FileAttr], features: Vec<(u32, Feature)>) -> Result<u64, Error> {
        self.flush()?;
        let path = self.path.clone();
        let err = |e: io::Error| Error::file(&path, e);
        let mut features = features;
        let descs: Vec<EventDesc<'_>> =
            attrs.iter().map(|a| EventDesc { attr: &a.attr, ids: &a.ids, name: &a.name }).collect();
        features.push((
            feature::EVENT_DESC,
            Feature::Bytes(event_desc_feature(crate::sys::FILE_ATTR_SIZE, &descs)),
        ));
        features.sort_by_key(|(id, _)| *id);
        features.dedup_by_key(|(id, _)| *id);

        let index_off = self.data_offset + self.data_size;
        let mut offset = index_off + 16 * features.len() as u64;
        let mut index = Vec::new();
        for (_, content) in &features {
            put_u64(&mut index, offset);
            put_u64(&mut index, content.len());
            offset += content.len();
        }
        let ids: Vec<u32> = features.iter().map(|(id, _)| *id).collect();
        self.file.seek(SeekFrom::Start(index_off)).map_err(err)?;
        self.file.write_all(&index).map_err(err)?;
        for (_, content) in features {
            match content {
                Feature::Bytes(b) => self.file.write_all(&b).map_err(err)?,
                Feature::File(mut f, len) => {
                    f.seek(SeekFrom::Start(0)).map_err(err)?;
                    let copied = io::copy(&mut (&mut f).take(len), &mut self.file).map_err(err)?;
                    if copied != len {
                        return Err(err(io::Error::other("a feature section's file ended early")));
                    }
                }
            }
        }

        let (bytes, fits) = encode_attrs(attrs, HEADER_SIZE, ATTR_RESERVE);
        if fits {
            self.file.write_all_at(&bytes, HEADER_SIZE).map_err(err)?;
            self.attrs_at_front = Some((HEADER_SIZE, attr_section_len(attrs)));
        } else {
            let (bytes, _) = encode_attrs(attrs, offset, u64::MAX);
            self.file.write_all_at(&bytes, offset).map_err(err)?;
            self.attrs_at_front = Some((offset, attr_section_len(attrs)));
            offset += bytes.len() as u64;
        }
        self.file.set_len(offset).map_err(err)?;
        self.write_header(&ids)?;
        match self.stream.take() {
            Some(mut out) => {
                self.file.seek(SeekFrom::Start(0)).map_err(err)?;
                io::copy(&mut self.file, &mut out).map_err(|e| Error::file(&self.output, e))?;
            }
            None => {
                self.file.sync_data().ok();
            }
        }
        Ok(offset)
    }
}

fn attr_section_len(attrs: &[FileAttr]) -> u64 {
    attrs.len() as u64 * (crate::sys::FILE_ATTR_SIZE as u64 + 16)
}

/// Encodes the attribute section (attr + ids section pointer each) followed by the id arrays,
/// placed at `base`. Returns the bytes and whether they fit in `limit` bytes.
fn encode_attrs(attrs: &[FileAttr], base: u64, limit: u64) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut ids_off = base + attr_section_len(attrs);
    let mut ids = Vec::new();
    for a in attrs {
        out.extend_from_slice(&a.attr);
        put_u64(&mut out, ids_off);
        put_u64(&mut out, 8 * a.ids.len() as u64);
        for id in &a.ids {
            put_u64(&mut ids, *id);
        }
        ids_off += 8 * a.ids.len() as u64;
    }
    out.extend_from_slice(&ids);
    let fits = out.len() as u64 <= limit;
    (out, fits)
}

fn is_sample(record: &[u8]) -> bool {
    record.get(0..4).is_some_and(|t| {
        u32::from_le_bytes(t.try_into().expect("4 bytes")) == crate::sys::record_type::SAMPLE
    })
}

/// A new file for a recording that will be named `path`: beside it, under a name of its own
/// (returned), never an existing file, never through a symbolic link, and readable by its
/// owner only (recordings hold stack memory).
pub fn create_beside(path: &Path) -> Result<(File, PathBuf), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(why) = std::fs::symlink_metadata(path).ok().and_then(|m| not_replaceable(&m)) {
        return Err(Error::file(path, io::Error::other(why)));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.rperf-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&temp)
        .map_err(|e| Error::file(path, e))?;
    Ok((file, temp))
}

/// Gives the file `temp` the name `output`: an existing file (or link) there is moved aside to
/// `NAME.old`, as perf does, never written through.
/// Only a regular file or a link is ever moved: anything else there (a device node, a FIFO,
/// a socket, a folder) is refused, and so is a `NAME.old` that is not a regular file or link.
pub fn publish_as(temp: &Path, output: &Path) -> Result<(), Error> {
    if let Ok(meta) = std::fs::symlink_metadata(output) {
        if let Some(why) = not_replaceable(&meta) {
            let e = io::Error::other(format!("{why}; the recording is kept as {}", temp.display()));
            return Err(Error::file(output, e));
        }
        let mut old = output.as_os_str().to_owned();
        old.push(".old");
        let old = PathBuf::from(old);
        if let Some(why) = std::fs::symlink_metadata(&old).ok().and_then(|m| not_replaceable(&m)) {
            let e = io::Error::other(format!("{why}; the recording is kept as {}", temp.display()));
            return Err(Error::file(&old, e));
        }
        std::fs::rename(output, &old).map_err(|e| Error::file(output, e))?;
    }
    std::fs::rename(temp, output).map_err(|e| Error::file(output, e))
}

/// Why what `meta` describes may not be moved aside for a recording: only regular files and
/// links are.
fn not_replaceable(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() || t.is_symlink() {
        return None;
    }
    let kinds = [
        (t.is_dir(), "a directory"),
        (t.is_block_device(), "a block device"),
        (t.is_socket(), "a socket"),
        (t.is_char_device(), "a character device"),
        (t.is_fifo(), "a FIFO"),
    ];
    let what = kinds.into_iter().find_map(|(is, what)| is.then_some(what)).unwrap_or("not a regular file");
    Some(format!(
        "it is {what}, which rperf never moves or replaces; record to a regular file (a FIFO or character device given to `rperf record -o` is written to)"
    ))
}

/// A new file without a name (0600, in the temporary folder), for what is gathered during a
/// recording and copied into it at the end: gone with its last descriptor, never reachable
/// through a path another user could swap.
pub(crate) fn unnamed_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(std::env::temp_dir())
}

/// Opens the FIFO or character device `path` for writing (without creating, truncating or
/// following a link), and an unnamed file to make the recording in, in the temporary folder.
fn open_stream(path: &Path) -> Result<(File, File), Error> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let out = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::file(path, e))?;
    // What was opened, not what the path named a moment before.
    let kind = out.metadata().map_err(|e| Error::file(path, e))?.file_type();
    if !(kind.is_fifo() || kind.is_char_device()) {
        return Err(Error::file(path, io::Error::other("it changed while being opened")));
    }
    let dir = std::env::temp_dir();
    let file = unnamed_file().map_err(|e| {
            let e = io::Error::new(
                e.kind(),
                format!("{e}: the recording for {} is made in an unnamed file there first; set TMPDIR to a folder of a filesystem that has room and supports O_TMPFILE", path.display()),
            );
            Error::file(&dir, e)
        })?;
    Ok((out, file))
}

impl Drop for PerfDataWriter {
    /// A recording that never started leaves nothing behind.
    fn drop(&mut self) {
        if !self.published {
            std::fs::remove_file(&self.path).ok();
        }
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
