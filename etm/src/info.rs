//! The trace units' configuration a recording stores in its AUXTRACE_INFO record (the layout
//! Linux's `cs-etm` PMU driver and simpleperf write): one block per CPU with the unit's ID and
//! configuration registers, which a decoder must be set up with.

/// `PERF_AUXTRACE_CS_ETM`: the AUXTRACE_INFO type of CoreSight ETM recordings.
const CS_ETM: u32 = 3;
const ETMV3_MAGIC: u64 = 0x3030_3030_3030_3030;
const ETMV4_MAGIC: u64 = 0x4040_4040_4040_4040;
const ETE_MAGIC: u64 = 0x5050_5050_5050_5050;

/// The registers an ETMv4 or ETE unit's configuration is recorded with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registers {
    pub configr: u32,
    pub traceidr: u32,
    pub idr0: u32,
    pub idr1: u32,
    pub idr2: u32,
    pub idr8: u32,
}

/// A trace unit, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceUnit {
    /// ETMv4.
    Etmv4(Registers),
    /// ETE (Armv9): the same registers and TRCDEVARCH.
    Ete(Registers, u32),
    /// ETMv3/PTM, which rperf does not decode.
    Etmv3,
}

/// One CPU's trace unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuTrace {
    pub cpu: u32,
    pub unit: TraceUnit,
}

impl CpuTrace {
    /// The CoreSight trace ID its trace carries (TRCTRACEIDR's low 7 bits).
    pub fn trace_id(&self) -> Option<u8> {
        match &self.unit {
            TraceUnit::Etmv4(r) | TraceUnit::Ete(r, _) => Some((r.traceidr & 0x7f) as u8),
            TraceUnit::Etmv3 => None,
        }
    }
}

/// The trace units of an AUXTRACE_INFO record's body (after the 8-byte record header).
pub fn parse_auxtrace_info(body: &[u8]) -> Result<Vec<CpuTrace>, String> {
    let words: Vec<u64> = body
        .get(8..)
        .unwrap_or_default()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let kind = body.get(..4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
    if kind != Some(CS_ETM) {
        return Err(format!("the AUXTRACE_INFO record is of type {kind:?}, not CoreSight ETM ({CS_ETM})"));
    }
    let [version, pmu_cpus, _snapshot, ..] = words[..] else {
        return Err(format!("the AUXTRACE_INFO record is {} bytes, too short for its header", body.len()));
    };
    if version > 1 {
        return Err(format!("AUXTRACE_INFO version {version}: rperf reads versions 0 and 1"));
    }
    let cpus = (pmu_cpus & 0xffff_ffff) as usize;
    let mut at = 3;
    let mut out = Vec::with_capacity(cpus.min(4096));
    for _ in 0..cpus {
        let word =
            |i: usize| words.get(at + i).copied().ok_or("the AUXTRACE_INFO record ends inside a CPU's block");
        let (magic, cpu) = (word(0)?, word(1)? as u32);
        // Version 1 says how many registers follow; version 0 has a fixed count per unit.
        let (first, count) = match (version, magic) {
            (1, _) => (3, word(2)? as usize),
            (_, ETMV3_MAGIC) => (2, 4),
            (_, ETMV4_MAGIC) => (2, 7),
            (_, ETE_MAGIC) => (2, 8),
            _ => return Err(format!("CPU block magic {magic:#x} is no ETM's")),
        };
        let reg = |i: usize| word(first + i).map(|v| v as u32);
        // TRCCONFIGR, TRCTRACEIDR, TRCIDR0, TRCIDR1, TRCIDR2, TRCIDR8, TRCAUTHSTATUS (and, for
        // ETE, TRCDEVARCH).
        let registers = || -> Result<Registers, &str> {
            let (configr, traceidr, idr0) = (reg(0)?, reg(1)?, reg(2)?);
            Ok(Registers { configr, traceidr, idr0, idr1: reg(3)?, idr2: reg(4)?, idr8: reg(5)? })
        };
        let unit = match magic {
            ETMV4_MAGIC => TraceUnit::Etmv4(registers()?),
            ETE_MAGIC => TraceUnit::Ete(registers()?, reg(7)?),
            ETMV3_MAGIC => TraceUnit::Etmv3,
            _ => return Err(format!("CPU block magic {magic:#x} is no ETM's")),
        };
        out.push(CpuTrace { cpu, unit });
        at += first + count;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(words: &[u64]) -> Vec<u8> {
        let mut b = vec![3, 0, 0, 0, 0, 0, 0, 0];
        words.iter().for_each(|w| b.extend_from_slice(&w.to_le_bytes()));
        b
    }

    #[test]
    fn version_1_etmv4_blocks() {
        let b = record(&[
            1,
            2,
            0,
            ETMV4_MAGIC,
            0,
            7,
            0x1,
            0x10,
            0x2,
            0x3,
            0x4,
            0x5,
            0x6,
            ETMV4_MAGIC,
            1,
            7,
            0,
            0x12,
            0,
            0,
            0,
            0,
            0,
        ]);
        let units = parse_auxtrace_info(&b).unwrap();
        assert_eq!(units.len(), 2);
        assert_eq!(units[0].trace_id(), Some(0x10));
        let registers = Registers { configr: 0, traceidr: 0x12, idr0: 0, idr1: 0, idr2: 0, idr8: 0 };
        assert_eq!(units[1], CpuTrace { cpu: 1, unit: TraceUnit::Etmv4(registers) });
    }

    #[test]
    fn damaged_records_are_refused() {
        assert!(parse_auxtrace_info(&record(&[1, 2, 0, ETMV4_MAGIC, 0, 7, 1])).is_err());
        assert!(parse_auxtrace_info(&record(&[1, 1, 0, 0x1234, 0, 0])).is_err());
        assert!(parse_auxtrace_info(&[4, 0, 0, 0, 0, 0, 0, 0]).is_err());
        assert!(parse_auxtrace_info(&record(&[7, 0, 0])).is_err());
    }
}
