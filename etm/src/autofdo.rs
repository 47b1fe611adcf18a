//! ETM trace as AutoFDO's text input, as `simpleperf inject` writes it: per binary, how many
//! times each address range ran (an instruction range's first to last instruction), and how
//! many times each taken branch went from a range's last instruction to its target: the target
//! a direct branch's encoding names (A64 B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ), 0 for an indirect
//! branch (a return, a call through a register), as simpleperf writes them. Addresses are the
//! binary's, less its first loadable segment's (AutoFDO reads them as file offsets).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::binaries::Binaries;
use crate::decode::{ElementKind, Locate, Sink};
use crate::recording::Mapping;
use crate::Element;

/// `ocsd_instr_type`: a branch, an indirect branch.
const BRANCH: u32 = 1;
const INDIRECT_BRANCH: u32 = 2;

/// What ran in one binary.
#[derive(Default)]
pub struct BinaryProfile {
    pub ranges: BTreeMap<(u64, u64), u64>,
    pub branches: BTreeMap<(u64, u64), u64>,
}

/// What ran, by binary path.
#[derive(Default)]
pub struct AutoFdo {
    pub binaries: BTreeMap<String, BinaryProfile>,
}

/// Collects instruction ranges and taken branches while a recording decodes.
pub struct Collector<'a> {
    pub binaries: &'a mut Binaries,
    pub profile: AutoFdo,
    /// Only binaries whose path this accepts are kept.
    keep: Box<dyn Fn(&str) -> bool + 'a>,
}

impl<'a> Collector<'a> {
    pub fn new(binaries: &'a mut Binaries, keep: Box<dyn Fn(&str) -> bool + 'a>) -> Collector<'a> {
        Collector { binaries, profile: AutoFdo::default(), keep }
    }

    /// What ran, by binary.
    pub fn finish(self) -> AutoFdo {
        self.profile
    }
}

/// The target of the A64 direct branch `insn` at `at`; None for any other instruction.
fn branch_target(insn: u32, at: u64) -> Option<u64> {
    let signed = |bits: u32, width: u32| ((bits << (32 - width)) as i32 >> (32 - width)) as i64 * 4;
    let offset = match insn {
        // B, BL: imm26.
        i if i & 0x7c00_0000 == 0x1400_0000 => signed(i & 0x03ff_ffff, 26),
        // B.cond: imm19; CBZ/CBNZ: imm19.
        i if i & 0xff00_0010 == 0x5400_0000 || i & 0x7e00_0000 == 0x3400_0000 => {
            signed((i >> 5) & 0x7ffff, 19)
        }
        // TBZ/TBNZ: imm14.
        i if i & 0x7e00_0000 == 0x3600_0000 => signed((i >> 5) & 0x3fff, 14),
        _ => return None,
    };
    Some(at.wrapping_add_signed(offset))
}

impl Sink for Collector<'_> {
    fn element(&mut self, _id: u8, e: &Element, locate: Locate<'_>) {
        if e.kind != ElementKind::INSTR_RANGE {
            return;
        }
        let last = e.en_addr.saturating_sub(u64::from(e.last_size));
        let (Some((mapping, first)), Some((_, last_offset))) = (locate(e.st_addr), locate(last)) else {
            return;
        };
        if !(self.keep)(&mapping.path) {
            return;
        }
        let start = self.binaries.vaddr_in_file(&mapping, first);
        let end = self.binaries.vaddr_in_file(&mapping, last_offset);
        let target = match (e.last_executed, e.last_type) {
            (true, BRANCH) => {
                let mut insn = [0u8; 4];
                let read = self.binaries.read(&mapping.path, last_offset, &mut insn) == 4;
                Some(read.then(|| branch_target(u32::from_le_bytes(insn), end)).flatten().unwrap_or(0))
            }
            (true, INDIRECT_BRANCH) => Some(0),
            _ => None,
        };
        let binary = self.profile.binaries.entry(mapping.path).or_default();
        *binary.ranges.entry((start, end)).or_default() += 1;
        if let Some(to) = target {
            *binary.branches.entry((end, to)).or_default() += 1;
        }
    }

    fn code(&mut self, mapping: &Mapping, offset: u64, out: &mut [u8]) -> usize {
        self.binaries.read(&mapping.path, offset, out)
    }
}

impl AutoFdo {
    /// Adds what `other` counted.
    pub fn merge(&mut self, other: AutoFdo) {
        for (path, b) in other.binaries {
            let into = self.binaries.entry(path).or_default();
            for (k, n) in b.ranges {
                *into.ranges.entry(k).or_default() += n;
            }
            for (k, n) in b.branches {
                *into.branches.entry(k).or_default() += n;
            }
        }
    }

    /// The AutoFDO text of every binary, by path; `base` gives a binary's first loadable
    /// segment's address and `build_id` its recorded build id.
    pub fn text(
        &self,
        mut base: impl FnMut(&str) -> u64,
        build_id: impl Fn(&str) -> Option<Vec<u8>>,
    ) -> String {
        let mut out = String::new();
        if self.binaries.len() > 1 {
            out.push_str("// Please split this file. AutoFDO only accepts profile for one binary.\n");
        }
        for (path, b) in &self.binaries {
            let base = base(path);
            let ranges: Vec<_> = b
                .ranges
                .iter()
                .filter(|((s, e), _)| *s >= base && *e >= base)
                .map(|((s, e), n)| (s - base, e - base, n))
                .collect();
            let _ = writeln!(out, "{}", ranges.len());
            for (s, e, n) in ranges {
                let _ = writeln!(out, "{s:x}-{e:x}:{n}");
            }
            out.push_str("0\n");
            let branches: Vec<_> = b
                .branches
                .iter()
                .filter(|((from, _), _)| *from >= base)
                .map(|((from, to), n)| (from - base, to.checked_sub(base).unwrap_or(0), n))
                .collect();
            let _ = writeln!(out, "{}", branches.len());
            for (from, to, n) in branches {
                let _ = writeln!(out, "{from:x}->{to:x}:{n}");
            }
            let mut id = build_id(path).unwrap_or_default();
            id.resize(20, 0);
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(out, "// build_id: 0x{hex}\n// {path}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::branch_target;

    #[test]
    fn a64_direct_branch_targets() {
        // bl +0x90 at 0x1050 (to 0x10e0); b.ne -0x24 at 0x1080 (to 0x105c); b . (a loop).
        assert_eq!(branch_target(0x9400_0024, 0x1050), Some(0x10e0));
        assert_eq!(branch_target(0x54ff_fee1, 0x1080), Some(0x105c));
        assert_eq!(branch_target(0x1400_0000, 0x2ec), Some(0x2ec));
        // cbz x0, +8; tbnz w1, #3, -4.
        assert_eq!(branch_target(0xb400_0040, 0x100), Some(0x108));
        assert_eq!(branch_target(0x371f_ffe1, 0x100), Some(0xfc));
        // ret, br x17: not direct.
        assert_eq!(branch_target(0xd65f_03c0, 0x1088), None);
        assert_eq!(branch_target(0xd61f_0220, 0x10ec), None);
    }
}
