//! Opening a perf.data file that may be damaged: its header checked against the file's
//! length and repaired where the data allows (each repair said), the file read through those
//! patches, and a walk over the data section that finds where readable records end. Over a
//! windowed mapping of the file, so that a large recording is never read whole into memory.

pub use crate::repaired::Repaired;
use std::io::Read;

use crate::feature;
use crate::header::{FileHeader, DATA_AT, DATA_SIZE_AT, EVENT_TYPES_AT, FEATURES_AT, FEATURE_ENTRY_SIZE};
use crate::walk::{Step, Walk};

/// A file read through byte patches: corrections to header fields, so that the metadata reader
/// never acts on sizes the file cannot hold.
pub struct PatchedFile {
    inner: Window,
    patches: Vec<(u64, Vec<u8>)>,
    pos: u64,
}

impl std::io::Read for PatchedFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Copied straight from the mapped file: no read() into a buffer first.
        let n = match self.inner.rest(self.pos)? {
            Some(rest) => {
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                n
            }
            None => 0,
        };
        for (at, bytes) in &self.patches {
            let (start, end) = (*at, *at + bytes.len() as u64);
            let (rs, re) = (self.pos, self.pos + n as u64);
            if start < re && end > rs {
                let from = start.max(rs);
                let to = end.min(re);
                buf[(from - rs) as usize..(to - rs) as usize]
                    .copy_from_slice(&bytes[(from - start) as usize..(to - start) as usize]);
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for PatchedFile {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        use std::io::SeekFrom;
        let pos = match to {
            SeekFrom::Start(at) => Some(at),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.inner.len.checked_add_signed(d),
        };
        self.pos = pos.ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start of the file")
        })?;
        Ok(self.pos)
    }
}

/// Why a file cannot be read as perf.data: each names the header field or file offset at fault.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// Nothing in the file.
    #[error("the file is empty")]
    Empty,
    /// Shorter than a header.
    #[error("the file is {len} bytes, shorter than a perf.data header (104)")]
    TooShort {
        /// The file's length.
        len: u64,
    },
    /// Not a perf.data file.
    #[error("it starts with {magic:02x?} where perf.data files start with PERFILE2")]
    NotPerfData {
        /// Its first bytes.
        magic: [u8; 8],
    },
    /// The attribute section is not in the file.
    #[error(
        "the attribute section (header offset 24) claims {size} bytes at file offset {offset}, past the end of the {len}-byte file"
    )]
    AttrsPastEnd {
        /// Where the header says it is.
        offset: u64,
        /// Its size as the header says.
        size: u64,
        /// The file's length.
        len: u64,
    },
    /// The data section starts after the end of the file.
    #[error("the data section starts at file offset {offset}, past the end of the {len}-byte file")]
    DataPastEnd {
        /// Where the header says it starts.
        offset: u64,
        /// The file's length.
        len: u64,
    },
    /// An attribute size no perf_event_attr has.
    #[error("the attribute size (header offset 16) is {size}; perf_event_attr is 64 to 4096 bytes")]
    AttrSize {
        /// The size the header gives.
        size: u64,
    },
    /// Reading the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A file opened for its metadata, its data section's (offset, size), and warnings.
pub type Checked = (PatchedFile, (u64, u64), Vec<Repaired>);

/// Opens a perf.data file after checking its header against the file's length; returns the
/// file for the metadata reader and the data section's (offset, size). Sections that
/// reach past the end are repaired where the data allows (a data section whose size is stale
/// or 0, as crashed recordings leave it, is read up to the end of the file; feature sections
/// past the end are dropped), each with a warning; a header that cannot be made sense of is an
/// error naming the field and its file offset.
pub fn open_checked(file: std::fs::File) -> Result<Checked, FileError> {
    let len = file.metadata()?.len();
    let mut head = [0u8; 104];
    {
        let mut f = &file;
        f.read_exact(&mut head).map_err(|_| match len {
            0 => FileError::Empty,
            _ => FileError::TooShort { len },
        })?;
    }
    let mut r = Repair { file, len, warnings: Vec::new(), patches: Vec::new() };
    let Some(header) = FileHeader::parse(&head) else {
        if &head[..8] != b"2ELIFREP" {
            return Err(FileError::NotPerfData { magic: head[..8].try_into().expect("8 bytes") });
        }
        // Big-endian recordings are left unrepaired to the readers, which know their layout.
        let be = |at: usize| u64::from_be_bytes(head[at..at + 8].try_into().expect("8 bytes"));
        let data = (be(DATA_AT as usize), be(DATA_SIZE_AT as usize));
        return Ok(r.into_checked(data));
    };
    let (attr_off, attr_len) = header.attrs;
    if !r.fits(attr_off, attr_len) {
        return Err(FileError::AttrsPastEnd { offset: attr_off, size: attr_len, len: r.len });
    }
    let (ev_off, ev_size) = header.event_types;
    if !r.fits(ev_off, ev_size) {
        r.patches.push((EVENT_TYPES_AT, vec![0; 16]));
        r.warnings.push(Repaired::EventTypesPastEnd);
    }
    let (data, features) = r.check_data(&header)?;
    r.check_features(data.0 + data.1, &features)?;
    // The attribute size divides section sizes; the event-types section's id lists are
    // allocated by their sizes.
    let attr_size = header.attr_size;
    if !(64..=4096).contains(&attr_size) {
        return Err(FileError::AttrSize { size: attr_size });
    }
    if ev_size > 0 && r.fits(ev_off, ev_size) {
        let entry = attr_size + 16;
        r.check_id_lists(ev_off, ev_size.min(entry * 4096), entry, attr_size, "event type")?;
    }
    // Each attribute entry ends in the (offset, size) of its id list, which the reader
    // allocates by (a fuzzer find: tests/fuzz-regressions/attr-id-list-past-the-end).
    r.check_id_lists(attr_off, attr_len.min(attr_size * 4096), attr_size, attr_size - 16, "attribute")?;
    Ok(r.into_checked(data))
}

/// What `open_checked` found and patched so far.
struct Repair {
    file: std::fs::File,
    len: u64,
    warnings: Vec<Repaired>,
    patches: Vec<(u64, Vec<u8>)>,
}

impl Repair {
    /// Whether `size` bytes at `off` lie inside the file.
    fn fits(&self, off: u64, size: u64) -> bool {
        off.checked_add(size).is_some_and(|end| end <= self.len)
    }

    fn into_checked(self, data: (u64, u64)) -> Checked {
        let inner = Window::new(self.file, self.len);
        (PatchedFile { inner, patches: self.patches, pos: 0 }, data, self.warnings)
    }

    /// The data section as it can be read, and the feature sections still to check. A data
    /// section cut short (its size never written, or the file ending early) is read up to its
    /// last whole record, without features.
    fn check_data(&mut self, header: &FileHeader) -> Result<((u64, u64), Vec<u32>), FileError> {
        let (data_off, mut data_size) = header.data;
        if data_off > self.len {
            return Err(FileError::DataPastEnd { offset: data_off, len: self.len });
        }
        let mut features = header.features.clone();
        let table_fits = data_off
            .checked_add(data_size)
            .is_some_and(|end| self.fits(end, FEATURE_ENTRY_SIZE * features.len() as u64));
        if data_size == 0 || !self.fits(data_off, data_size) {
            let present = self.len - data_off;
            // Read up to the last whole record: anything after it is a record cut in two, or
            // feature sections, not records.
            let (whole, cut) = walk_records(&self.file, data_off, present);
            if let Some((at, claimed)) = cut {
                self.warnings.push(Repaired::RecordsCutAt { at, claimed });
            }
            self.warnings.push(Repaired::DataCut { claimed: data_size, present, offset: data_off, whole });
            data_size = whole;
            self.patches.push((DATA_SIZE_AT, data_size.to_le_bytes().to_vec()));
            features.clear();
        } else if !table_fits {
            self.warnings.push(Repaired::FeaturesMissing { offset: data_off + data_size });
            features.clear();
        }
        if features.is_empty() {
            self.patches.push((FEATURES_AT, vec![0; 32]));
        }
        Ok(((data_off, data_size), features))
    }

    /// Each feature section must fit in the file, and the counts inside the sections that the
    /// reader sizes allocations by must fit in the section; the others are dropped from the
    /// header's bitmap and from the table at `table_at`.
    fn check_features(&mut self, table_at: u64, features: &[u32]) -> Result<(), FileError> {
        const ENTRY: usize = FEATURE_ENTRY_SIZE as usize;
        let mut table = vec![0u8; ENTRY * features.len()];
        if !table.is_empty() {
            read_at(&self.file, table_at, &mut table)?;
        }
        let mut keep = Vec::new();
        for (i, feat) in features.iter().enumerate() {
            let (off, size) = (u64_at(&table, ENTRY * i), u64_at(&table, ENTRY * i + 8));
            let entry_at = table_at + FEATURE_ENTRY_SIZE * i as u64;
            let problem = if !self.fits(off, size) {
                Some(format!("claims {size} bytes at offset {off}, past the end of the file"))
            } else {
                section_problem(&self.file, *feat, off, size)
            };
            match problem {
                Some(why) => self.warnings.push(Repaired::FeatureIgnored { feature: *feat, entry_at, why }),
                None => keep.push(i),
            }
        }
        if keep.len() != features.len() {
            let mut new_table = Vec::with_capacity(table.len());
            let kept: Vec<u32> = keep.iter().map(|&i| features[i]).collect();
            let bitmap = crate::header::feature_bitmap(&kept).to_vec();
            for &i in &keep {
                new_table.extend_from_slice(&table[ENTRY * i..ENTRY * (i + 1)]);
            }
            self.patches.push((FEATURES_AT, bitmap));
            self.patches.push((table_at, new_table));
        }
        Ok(())
    }

    /// Entries of `entry` bytes in the `size` bytes at `off`, each with the (offset, size) of an
    /// id list at byte `at`: lists past the end of the file are emptied, each said.
    fn check_id_lists(
        &mut self,
        off: u64,
        size: u64,
        entry: u64,
        at: u64,
        what: &'static str,
    ) -> Result<(), FileError> {
        if entry == 0 {
            return Ok(());
        }
        let mut bytes = vec![0u8; size as usize];
        read_at(&self.file, off, &mut bytes)?;
        for (k, e) in bytes.chunks_exact(entry as usize).enumerate() {
            let (ids_off, ids_size) = (u64_at(e, at as usize), u64_at(e, at as usize + 8));
            if !self.fits(ids_off, ids_size) {
                let field = off + k as u64 * entry + at;
                self.warnings.push(Repaired::IdListPastEnd {
                    what,
                    index: k,
                    field,
                    size: ids_size,
                    offset: ids_off,
                });
                self.patches.push((field, vec![0; 16]));
            }
        }
        Ok(())
    }
}

/// Reads `buf.len()` bytes of `file` at `off`.
pub fn read_at(file: &std::fs::File, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, off)
}

/// Why a feature section cannot be handed to the reader, for the sections whose counts the
/// reader trusts: strings, string lists, event descriptions, PMU mappings.
fn section_problem(file: &std::fs::File, feat: u32, off: u64, size: u64) -> Option<String> {
    use feature::{ARCH, CMDLINE, CPUDESC, CPUID, EVENT_DESC, HOSTNAME, OSRELEASE, PMU_MAPPINGS, VERSION};
    const STRINGS: &[u32] = &[HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID];
    if !STRINGS.contains(&feat) && ![CMDLINE, EVENT_DESC, PMU_MAPPINGS].contains(&feat) {
        return None;
    }
    let mut b = vec![0u8; size as usize];
    if let Err(e) = read_at(file, off, &mut b) {
        return Some(format!("cannot be read: {e}"));
    }
    let mut r = SectionCursor { b: &b, at: 0 };
    let ok = match feat {
        CMDLINE => r.u32().is_some_and(|n| (0..n).all(|_| r.string())),
        EVENT_DESC => (|| {
            let nr = r.u32()?;
            let attr_size = r.u32()? as usize;
            for _ in 0..nr {
                r.skip(attr_size)?;
                let ids = r.u32()? as usize;
                r.string().then_some(())?;
                r.skip(ids.checked_mul(8)?)?;
            }
            Some(())
        })()
        .is_some(),
        PMU_MAPPINGS => r.u32().is_some_and(|n| (0..n).all(|_| r.u32().is_some() && r.string())),
        _ => r.string(),
    };
    (!ok).then(|| format!("holds a count or length that runs past its {size} bytes"))
}

/// Reads the counted fields of a feature section, refusing to go past its end.
struct SectionCursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl SectionCursor<'_> {
    fn skip(&mut self, n: usize) -> Option<()> {
        let end = self.at.checked_add(n)?;
        (end <= self.b.len()).then(|| self.at = end)
    }

    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(v.try_into().unwrap()))
    }

    /// A perf_header_string: a u32 length and that many bytes.
    fn string(&mut self) -> bool {
        self.u32().is_some_and(|len| self.skip(len as usize).is_some())
    }
}

/// Whether a record type is one perf.data files hold: kernel records, perf's user records, or
/// simpleperf's.
fn plausible_type(t: u32) -> bool {
    (1..=32).contains(&t) || (64..=96).contains(&t) || (32768..=32800).contains(&t)
}

/// Walks records from `start` for at most `limit` bytes. Returns the length of the run of
/// well-formed records, and, when an AUXTRACE record in it claims trace data past the end,
/// that record's offset and claim: the reader would allocate that size before reading, so it
/// must never see the record. Records of a type no perf.data file holds end the run too.
pub fn walk_records(file: &std::fs::File, start: u64, limit: u64) -> (u64, Option<(u64, u64)>) {
    let Ok(file) = file.try_clone() else { return (0, None) };
    let Ok(len) = file.metadata().map(|m| m.len()) else { return (0, None) };
    let mut window = Window::new(file, len);
    let mut walk = Walk::new(start, start.saturating_add(limit).min(len), false);
    loop {
        let at = walk.at();
        match walk.next(&mut window) {
            Some(Ok(Step { trace_cut: Some((claimed, _)), .. })) => return (at - start, Some((at, claimed))),
            Some(Ok(step)) if plausible_type(step.kind) => {}
            // A record cut off by the end of the file, or bytes that are no records.
            Some(_) => return (at - start, None),
            None => return (walk.at().min(walk.end()) - start, None),
        }
    }
}

impl crate::walk::Source for Window {
    type Error = ();
    fn bytes(&mut self, at: u64, n: u64) -> Result<&[u8], ()> {
        Window::bytes(self, at, n).ok_or(())
    }
}

/// A file read through one window at a time (`mapped::window`).
pub struct Window {
    file: std::fs::File,
    len: u64,
    at: u64,
    map: Option<memmap2::Mmap>,
}

impl Window {
    const SIZE: u64 = 4 << 20;

    fn new(file: std::fs::File, len: u64) -> Window {
        Window { file, len, at: 0, map: None }
    }

    /// `n` bytes at file offset `off`.
    fn bytes(&mut self, off: u64, n: u64) -> Option<&[u8]> {
        let inside = |m: &memmap2::Mmap, at: u64| off >= at && off + n <= at + m.len() as u64;
        if !self.map.as_ref().is_some_and(|m| inside(m, self.at)) {
            self.map_at(off).ok()?;
        }
        let map = self.map.as_ref()?;
        let from = (off - self.at) as usize;
        map.get(from..from + n as usize)
    }

    /// The bytes from file offset `off` to the end of the window that holds it; None at or
    /// past the end of the file.
    fn rest(&mut self, off: u64) -> std::io::Result<Option<&[u8]>> {
        if off >= self.len {
            return Ok(None);
        }
        let inside = |m: &memmap2::Mmap, at: u64| off >= at && off < at + m.len() as u64;
        if !self.map.as_ref().is_some_and(|m| inside(m, self.at)) {
            self.map_at(off)?;
        }
        Ok(self.map.as_ref().map(|m| &m[(off - self.at) as usize..]))
    }

    /// Maps the window that starts at the page holding `off`, its pages read in at once.
    fn map_at(&mut self, off: u64) -> std::io::Result<()> {
        self.map = None;
        let (at, map) = crate::mapped::window(&self.file, self.len, off, 0, Self::SIZE, true)?;
        self.map = Some(map);
        self.at = at;
        Ok(())
    }
}

/// The `u64` at `at` of bytes read whole (0 past their end).
fn u64_at(b: &[u8], at: usize) -> u64 {
    crate::bytes::u64_at(b, at).unwrap_or(0)
}
