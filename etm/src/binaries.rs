//! The binaries a recording's trace ran in: found in the symbol folders by their recorded path
//! and build id, each loaded once.

use std::collections::HashMap;

use rperf_symbols::{BinaryFinder, ElfInfo, Found};

use crate::recording::Mapping;

/// A recording's binaries, found as reports find them (symbol folders, by the recorded build
/// id), each loaded once: the code decoding reads, and addresses in them.
pub struct Binaries {
    finder: BinaryFinder,
    build_ids: HashMap<String, Vec<u8>>,
    loaded: HashMap<String, Option<ElfInfo>>,
}

impl Binaries {
    pub fn new(finder: BinaryFinder, build_ids: HashMap<String, Vec<u8>>) -> Binaries {
        Binaries { finder, build_ids, loaded: HashMap::new() }
    }

    /// The binary recorded as `path`, when found.
    pub fn get(&mut self, path: &str) -> Option<&ElfInfo> {
        let (finder, ids) = (&self.finder, &self.build_ids);
        self.loaded
            .entry(path.to_string())
            .or_insert_with(|| {
                let id = ids.get(path).filter(|b| b.iter().any(|&x| x != 0));
                match finder.find(path, id.map(Vec::as_slice)) {
                    Found::File(file) => ElfInfo::load(&file).ok(),
                    _ => None,
                }
            })
            .as_ref()
    }

    /// `addr`'s place in the binary `mapping` maps: its virtual address in the file, where the
    /// binary is found, else its file offset.
    pub fn vaddr_in_file(&mut self, mapping: &Mapping, file_offset: u64) -> u64 {
        let Some(elf) = self.get(&mapping.path) else { return file_offset };
        if elf.segments.is_empty() {
            // A kernel module (relocatable: no segments), whose mapping starts at its `.text`.
            return match elf.section_place(".text") {
                Some((addr, offset)) => file_offset.wrapping_sub(offset).wrapping_add(addr),
                None => file_offset,
            };
        }
        elf.offset_to_vaddr(file_offset).unwrap_or(file_offset)
    }

    /// Fills `out` with the bytes of the binary recorded as `path` at file offset `offset`;
    /// how many (0 when it is not found).
    pub fn read(&mut self, path: &str, offset: u64, out: &mut [u8]) -> usize {
        let Some(elf) = self.get(path) else { return 0 };
        let Some(have) = usize::try_from(offset).ok().and_then(|o| elf.data.get(o..)) else { return 0 };
        let n = have.len().min(out.len());
        out[..n].copy_from_slice(&have[..n]);
        n
    }

    /// The virtual address of the binary's first loadable segment (0 when not found).
    pub fn first_load_vaddr(&mut self, path: &str) -> u64 {
        self.get(path).and_then(|elf| elf.segments.first().map(|s| s.vaddr)).unwrap_or(0)
    }

    /// The build id the recording gives `path`.
    pub fn build_id(&self, path: &str) -> Option<&[u8]> {
        self.build_ids.get(path).map(Vec::as_slice)
    }
}
