//! Compressed sections of input files (ELF's `SHF_COMPRESSED` with zlib or zstd, GNU's
//! `.zdebug`), inflated under bounds: a section declares the size it inflates to, and a hostile
//! file can declare anything or inflate past what it declares.
//!
//! A declared size is taken only up to `MAX_RATIO` times the compressed bytes (debug sections
//! inflate 2 to 7 times; a zlib stream at most about 1,000 times, zstd far more), and no
//! stream is read past it: what inflates to more, or to less, than it declares is refused. So
//! the memory a section costs is bounded by the file's own size, whatever its header says.
//!
//! ```
//! use rperf_perfdata::inflate::{inflate, Compression};
//! let zeros = [0x78, 0xda, 0x63, 0x60, 0xa0, 0x0c, 0x00, 0x00, 0x00, 0x40, 0x00, 0x01]; // 64 zero bytes
//! assert!(inflate(Compression::Zlib, &zeros, 64).is_ok());
//! assert!(inflate(Compression::Zlib, &zeros, 1 << 40).is_err());
//! ```

use std::io::Read;

/// The most a section may inflate to, in times its compressed size.
pub const MAX_RATIO: u64 = 128;

/// What any section may inflate to, whatever its compressed size (small sections have headers
/// and trailers that weigh on the ratio).
const SMALL: u64 = 64 << 10;

/// How a section is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// zlib (`ELFCOMPRESS_ZLIB`, `.zdebug`).
    Zlib,
    /// Zstandard (`ELFCOMPRESS_ZSTD`).
    Zstd,
}

/// Why a section was not inflated.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// The declared size is over the bound.
    #[error("declares {declared} bytes inflated from {compressed} compressed, over {MAX_RATIO} times")]
    TooLarge {
        /// The size the section declares.
        declared: u64,
        /// Its compressed bytes.
        compressed: u64,
    },
    /// The stream inflates to more than it declares.
    #[error("inflates past the {declared} bytes it declares")]
    Longer {
        /// The size the section declares.
        declared: u64,
    },
    /// The stream ends before what it declares, or is not a stream of its kind.
    #[error("does not inflate to the {declared} bytes it declares ({why})")]
    Damaged {
        /// The size the section declares.
        declared: u64,
        /// What went wrong.
        why: String,
    },
}

/// Checks `declared` against the bound for `compressed` bytes.
pub fn check(compressed: u64, declared: u64) -> Result<(), Refused> {
    if declared > compressed.saturating_mul(MAX_RATIO).max(SMALL) {
        return Err(Refused::TooLarge { declared, compressed });
    }
    Ok(())
}

/// A stream of the inflated bytes of `input` (`compressed` bytes long), which declares
/// `declared` of them: it fails rather than give more, and fails at its end when it gave fewer.
pub fn reader<'a>(
    format: Compression,
    input: impl Read + 'a,
    compressed: u64,
    declared: u64,
) -> Result<Bounded<'a>, Refused> {
    check(compressed, declared)?;
    let inner: Box<dyn Read + 'a> = match format {
        Compression::Zlib => Box::new(flate2::read::ZlibDecoder::new(input)),
        Compression::Zstd => {
            Box::new(Zstd { input, decoder: ruzstd::decoding::FrameDecoder::new(), in_frame: false })
        }
    };
    Ok(Bounded { inner, declared, given: 0 })
}

/// The inflated bytes of `data`, which declares `declared` of them.
pub fn inflate(format: Compression, data: &[u8], declared: u64) -> Result<Vec<u8>, Refused> {
    let mut stream = reader(format, data, data.len() as u64, declared)?;
    let mut out = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    stream.read_to_end(&mut out).map_err(|e| stream.refusal(e))?;
    Ok(out)
}

/// Inflated bytes, never more than declared (`reader`).
pub struct Bounded<'a> {
    inner: Box<dyn Read + 'a>,
    declared: u64,
    given: u64,
}

impl Bounded<'_> {
    /// The refusal an error of `read` stands for.
    pub fn refusal(&self, e: std::io::Error) -> Refused {
        match e.kind() {
            std::io::ErrorKind::FileTooLarge => Refused::Longer { declared: self.declared },
            _ => Refused::Damaged { declared: self.declared, why: e.to_string() },
        }
    }
}

impl Read for Bounded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.declared - self.given;
        if left == 0 {
            // One byte more than declared is one too many.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::new(std::io::ErrorKind::FileTooLarge, "inflates past its size")),
            };
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("it ends after {} bytes", self.given),
            ));
        }
        self.given += n as u64;
        Ok(n)
    }
}

/// Zstandard frames one after another, skippable frames passed over.
struct Zstd<R> {
    input: R,
    decoder: ruzstd::decoding::FrameDecoder,
    /// A frame's header was read and its bytes are not all given yet.
    in_frame: bool,
}

fn invalid(why: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string())
}

impl<R: Read> Read for Zstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use ruzstd::decoding::BlockDecodingStrategy;
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                // A block gives at most 128 KiB, whatever the frame declares.
                while self.decoder.can_collect() < buf.len() && !self.decoder.is_finished() {
                    let need = buf.len() - self.decoder.can_collect();
                    self.decoder
                        .decode_blocks(&mut self.input, BlockDecodingStrategy::UptoBytes(need))
                        .map_err(invalid)?;
                }
                match self.decoder.read(buf)? {
                    0 => self.in_frame = false,
                    n => return Ok(n),
                }
            }
            let mut magic = [0u8; 4];
            let got = read_up_to(&mut self.input, &mut magic)?;
            match got {
                0 => return Ok(0),
                4 => {}
                _ => return Err(invalid("a frame is cut short")),
            }
            if u32::from_le_bytes(magic) & 0xffff_fff0 == 0x184d_2a50 {
                // A skippable frame: its length, then bytes of no meaning here.
                let mut len = [0u8; 4];
                self.input.read_exact(&mut len)?;
                let len = u64::from(u32::from_le_bytes(len));
                if std::io::copy(&mut (&mut self.input).take(len), &mut std::io::sink())? != len {
                    return Err(invalid("a skippable frame runs past the end"));
                }
                continue;
            }
            self.decoder.reset((&magic[..]).chain(&mut self.input)).map_err(invalid)?;
            self.in_frame = true;
        }
    }
}

/// Reads into `buf` until it is full or the input ends; how many bytes were read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn zstd(bytes: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
    }

    #[test]
    fn sections_inflate_to_what_they_declare() {
        // Bytes of some entropy, as DWARF has: a few letters picked by a simple generator.
        let mut x = 1u32;
        let text: Vec<u8> = (0..200_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                b"abcdefgh"[(x >> 16) as usize % 8]
            })
            .collect();
        for (format, packed) in [(Compression::Zlib, zlib(&text)), (Compression::Zstd, zstd(&text))] {
            assert_eq!(inflate(format, &packed, text.len() as u64).unwrap(), text, "{format:?}");
            // Declaring less or more than the stream holds is refused.
            let less = inflate(format, &packed, text.len() as u64 - 1).unwrap_err();
            assert!(matches!(less, Refused::Longer { .. }), "{format:?}: {less}");
            let more = inflate(format, &packed, text.len() as u64 + 1).unwrap_err();
            assert!(matches!(more, Refused::Damaged { .. }), "{format:?}: {more}");
        }
    }

    #[test]
    fn a_bomb_is_refused_before_it_inflates() {
        // 16 MiB of zeros packs into a few kilobytes: far over the ratio.
        let zeros = vec![0u8; 16 << 20];
        for (format, packed) in [(Compression::Zlib, zlib(&zeros)), (Compression::Zstd, zstd(&zeros))] {
            let why = inflate(format, &packed, zeros.len() as u64).unwrap_err();
            assert!(matches!(why, Refused::TooLarge { .. }), "{format:?}: {why}");
            // Declared small, the stream is cut where the declared size ends.
            let why = inflate(format, &packed, 1000).unwrap_err();
            assert!(matches!(why, Refused::Longer { declared: 1000 }), "{format:?}: {why}");
        }
    }

    #[test]
    fn skippable_zstd_frames_are_passed_over() {
        let mut packed = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        packed.extend(zstd(b"after the skipped frame"));
        assert_eq!(inflate(Compression::Zstd, &packed, 23).unwrap(), b"after the skipped frame");
        let cut = [0x50, 0x2a, 0x4d, 0x18, 30, 0, 0, 0, 1];
        assert!(inflate(Compression::Zstd, &cut, 10).is_err());
    }
}
