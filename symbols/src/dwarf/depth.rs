//! A bound on how deep a compile unit's entries nest before addr2line reads them.
//!
//! addr2line reads a function's inlined subroutines recursively, one call per level, so a unit
//! nesting them tens of thousands deep (40 KB of `.debug_info` can) overflows the stack. Real
//! code nests a few dozen levels. Before a lookup reaches a unit, the unit's entries are walked
//! once, without recursion; a unit nesting deeper than `MAX_DEPTH` is not looked up in (its
//! addresses keep their symbol-table names), and a note names it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use super::sections::Reader;

/// The deepest a unit's entries may nest.
pub(super) const MAX_DEPTH: isize = 1024;

/// Which units a lookup may go to, for one DWARF.
pub(super) struct DepthGuard {
    dwarf: Arc<gimli::Dwarf<Reader>>,
    /// The file, for the note.
    path: PathBuf,
    /// Every unit's address ranges, made on first need.
    ranges: OnceLock<UnitRanges>,
    /// Units walked so far: whether each nests within the bound.
    checked: Mutex<HashMap<usize, bool>>,
}

impl DepthGuard {
    pub(super) fn new(dwarf: Arc<gimli::Dwarf<Reader>>, path: PathBuf) -> DepthGuard {
        DepthGuard { dwarf, path, ranges: OnceLock::new(), checked: Mutex::new(HashMap::new()) }
    }

    /// Whether every unit whose ranges hold `svma` nests within the bound.
    pub(super) fn allows(&self, svma: u64) -> bool {
        let ranges = self.ranges.get_or_init(|| UnitRanges::of(&self.dwarf));
        ranges.holding(svma).all(|unit| {
            let known = self.checked.lock().unwrap_or_else(|e| e.into_inner()).get(&unit).copied();
            if let Some(within) = known {
                return within;
            }
            // Walked without the lock: lookups in other binaries go on meanwhile.
            let within = nests_within(&self.dwarf, unit);
            let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            if checked.insert(unit, within).is_none() && !within {
                crate::notes::note_about(
                    &self.path,
                    format!(
                        "the compile unit at .debug_info offset {unit:#x} of {} nests its entries more \
                     than {MAX_DEPTH} deep; its inline frames and source lines are left out",
                        crate::text::printable(&self.path.to_string_lossy())
                    ),
                );
            }
            within
        })
    }
}

/// Whether every unit of `dwarf` (a split unit's `.dwo` file or package entry, read in whole
/// by the lookup that needed it) nests within the bound; a note names the first that does not.
pub(super) fn all_units_nest_within(dwarf: &gimli::Dwarf<Reader>, path: &std::path::Path) -> bool {
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Some(offset) = header.debug_info_offset().map(|o| o.0) else { continue };
        if !nests_within(dwarf, offset) {
            crate::notes::note_about(
                path,
                format!(
                    "the split compile unit at .debug_info offset {offset:#x} of {} nests its entries more \
                 than {MAX_DEPTH} deep; its inline frames and source lines are left out",
                    crate::text::printable(&path.to_string_lossy())
                ),
            );
            return false;
        }
    }
    true
}

/// Every unit's address ranges: (begin, end, unit offset) by begin, and for each the furthest
/// end of it and those before it, so that the ranges holding an address are found without
/// looking at every range that begins below it (ranges may overlap).
struct UnitRanges {
    ranges: Vec<(u64, u64, usize)>,
    reach: Vec<u64>,
}

impl UnitRanges {
    fn of(dwarf: &gimli::Dwarf<Reader>) -> UnitRanges {
        let ranges = unit_ranges(dwarf);
        let reach = ranges
            .iter()
            .scan(0u64, |far, r| {
                *far = (*far).max(r.1);
                Some(*far)
            })
            .collect();
        UnitRanges { ranges, reach }
    }

    /// The units whose ranges hold `svma` (a unit may come more than once).
    fn holding(&self, svma: u64) -> impl Iterator<Item = usize> + '_ {
        let end = self.ranges.partition_point(|r| r.0 <= svma);
        // Back from the last range beginning at or below the address, while any range up to
        // there reaches past it.
        (0..end)
            .rev()
            .take_while(move |&i| self.reach[i] > svma)
            .filter(move |&i| svma < self.ranges[i].1)
            .map(move |i| self.ranges[i].2)
    }
}

/// The address ranges of every unit: from `.debug_aranges` where it lists the unit, from the
/// unit's own entry otherwise (as addr2line finds them).
fn unit_ranges(dwarf: &gimli::Dwarf<Reader>) -> Vec<(u64, u64, usize)> {
    let mut out = super::focus::arange_units(&dwarf.debug_aranges);
    let listed: std::collections::HashSet<usize> = out.iter().map(|r| r.2).collect();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Some(offset) = header.debug_info_offset().map(|o| o.0) else { continue };
        if listed.contains(&offset) {
            continue;
        }
        let Ok(unit) = dwarf.unit(header) else { continue };
        let Ok(mut ranges) = dwarf.unit_ranges(&unit) else { continue };
        while let Ok(Some(r)) = ranges.next() {
            if r.end > r.begin {
                out.push((r.begin, r.end, offset));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Whether the entries of the unit at `offset` nest at most `MAX_DEPTH` deep (true when the
/// unit cannot be read that far: addr2line stops at the same error).
fn nests_within(dwarf: &gimli::Dwarf<Reader>, offset: usize) -> bool {
    let walk = || -> gimli::Result<bool> {
        let header = dwarf.debug_info.header_from_offset(gimli::DebugInfoOffset(offset))?;
        // Each level takes an entry's code and a null entry at least: a small unit cannot
        // nest past the bound, and is not walked.
        if header.length_including_self() <= 2 * MAX_DEPTH as usize {
            return Ok(true);
        }
        let unit = dwarf.unit(header)?;
        let mut entries = unit.entries_raw(None)?;
        while !entries.is_empty() {
            if entries.next_depth() > MAX_DEPTH {
                return Ok(false);
            }
            if let Some(abbrev) = entries.read_abbreviation()? {
                entries.skip_attributes(abbrev.attributes())?;
            }
        }
        Ok(true)
    };
    walk().unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::UnitRanges;

    #[test]
    fn ranges_holding_an_address_are_found_back_to_the_furthest_reach() {
        let ranges = vec![(0x100, 0x900, 1), (0x200, 0x300, 2), (0x400, 0x500, 3), (0x600, 0x700, 4)];
        let reach = vec![0x900, 0x900, 0x900, 0x900];
        let r = UnitRanges { ranges, reach };
        assert_eq!(r.holding(0x450).collect::<Vec<_>>(), [3, 1]);
        assert_eq!(r.holding(0x350).collect::<Vec<_>>(), [1]);
        assert_eq!(r.holding(0x950).count(), 0);
        assert_eq!(r.holding(0x50).count(), 0);
        let ranges = vec![(0x100, 0x200, 1), (0x200, 0x300, 2), (0x300, 0x400, 3)];
        let r = UnitRanges { reach: vec![0x200, 0x300, 0x400], ranges };
        assert_eq!(r.holding(0x250).collect::<Vec<_>>(), [2]);
    }
}
