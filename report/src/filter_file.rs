//! simpleperf's sample filter files (`--filter-file`): time ranges, for the whole recording,
//! per process and per thread. A line is a command: `GLOBAL_BEGIN t`, `GLOBAL_END t`,
//! `PROCESS_BEGIN pid t`, `PROCESS_END pid t`, `THREAD_BEGIN tid t`, `THREAD_END tid t` (times
//! in nanoseconds of the recording's clock) or `CLOCK name` (the clock the times are of:
//! `monotonic` unless said, as in simpleperf). Each BEGIN pairs with the next END of the same
//! scope; a BEGIN without an END is open. Samples are kept when their time is in a range of every
//! scope that has ranges for them.

use std::collections::HashMap;

/// Half-open time ranges `[begin, end)`.
type Ranges = Vec<(u64, u64)>;

/// The ranges of a filter file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeRanges {
    /// The clock the times are of.
    pub clock: String,
    global: Ranges,
    processes: HashMap<i32, Ranges>,
    threads: HashMap<i32, Ranges>,
}

impl TimeRanges {
    /// Parses a filter file's text; the error names the line and what is wrong with it.
    pub fn parse(text: &str) -> Result<TimeRanges, String> {
        // Each open range's begin, and the line that began it.
        let mut open: HashMap<(u8, i32), (u64, usize)> = HashMap::new();
        let mut out = TimeRanges { clock: "monotonic".into(), ..Default::default() };
        for (n, line) in text.lines().enumerate() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let bad = |what: &str| format!("line {}: {what}: `{}`", n + 1, line.escape_debug());
            let Some((&command, args)) = words.split_first() else { continue };
            let number = |i: usize| -> Result<u64, String> {
                args.get(i).and_then(|a| a.parse().ok()).ok_or_else(|| bad("expected a number"))
            };
            let (scope, id, time) = match command {
                "CLOCK" => match args {
                    [clock @ ("perf" | "monotonic" | "monotonic_raw" | "boottime" | "realtime")] => {
                        out.clock = clock.to_string();
                        continue;
                    }
                    _ => {
                        return Err(bad(
                            "the clock is one of perf, monotonic, monotonic_raw, boottime, realtime",
                        ))
                    }
                },
                "GLOBAL_BEGIN" | "GLOBAL_END" if args.len() == 1 => (0u8, 0, number(0)?),
                "PROCESS_BEGIN" | "PROCESS_END" | "THREAD_BEGIN" | "THREAD_END" if args.len() == 2 => {
                    let id = i32::try_from(number(0)?).map_err(|_| bad("id out of range"))?;
                    (if command.starts_with('P') { 1 } else { 2 }, id, number(1)?)
                }
                _ => return Err(bad("unknown command or wrong number of arguments")),
            };
            if command.ends_with("_BEGIN") {
                open.entry((scope, id)).or_insert((time, n + 1));
                continue;
            }
            let Some((begin, from)) = open.remove(&(scope, id)) else {
                return Err(bad("an END without a BEGIN"));
            };
            if time < begin {
                return Err(bad(&format!(
                    "the range ends at {time}, before it begins at {begin} (line {from}); an END's time is \
                     at or after its BEGIN's"
                )));
            }
            out.scope(scope, id).push((begin, time));
        }
        for ((scope, id), (begin, _)) in open {
            out.scope(scope, id).push((begin, u64::MAX));
        }
        Ok(out)
    }

    fn scope(&mut self, scope: u8, id: i32) -> &mut Ranges {
        match scope {
            0 => &mut self.global,
            1 => self.processes.entry(id).or_default(),
            _ => self.threads.entry(id).or_default(),
        }
    }

    /// Whether a sample of thread `tid` in process `pid` at `time` is kept.
    pub fn keeps(&self, pid: i32, tid: i32, time: u64) -> bool {
        let within = |r: &Ranges| r.iter().any(|&(b, e)| b <= time && time < e);
        (self.global.is_empty() || within(&self.global))
            && (self.processes.is_empty() || self.processes.get(&pid).is_some_and(within))
            && (self.threads.is_empty() || self.threads.get(&tid).is_some_and(within))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_pair_begin_with_the_next_end_of_their_scope() {
        let t = TimeRanges::parse(
            "CLOCK monotonic\nGLOBAL_BEGIN 1000\nGLOBAL_END 2000\nGLOBAL_BEGIN 3000\n\
             PROCESS_BEGIN 1 1000\nPROCESS_BEGIN 2 2000\nPROCESS_END 1 3000\nPROCESS_END 2 4000\n",
        )
        .unwrap();
        assert!(t.keeps(1, 1, 1500));
        assert!(!t.keeps(1, 1, 2500), "outside the global ranges");
        assert!(!t.keeps(2, 2, 1500), "outside process 2's range");
        assert!(t.keeps(2, 2, 3500));
        assert!(!t.keeps(3, 3, 3500), "a process without ranges");
    }

    #[test]
    fn bad_lines_are_named() {
        let e = TimeRanges::parse("GLOBAL_BEGIN 1\nGLOBAL_END x\n").unwrap_err();
        assert!(e.starts_with("line 2: expected a number"), "{e}");
        assert!(TimeRanges::parse("THREAD_END 5 10\n").unwrap_err().contains("END without a BEGIN"));
        assert!(TimeRanges::parse("CLOCK tai\n").is_err());
        assert_eq!(TimeRanges::parse("").unwrap().clock, "monotonic");
        assert_eq!(TimeRanges::parse("CLOCK perf\n").unwrap().clock, "perf");
        // A range that ends before it begins is a mistake, not an empty range.
        let e = TimeRanges::parse("GLOBAL_BEGIN 10\nPROCESS_BEGIN 4 500\nPROCESS_END 4 200\n").unwrap_err();
        assert!(e.starts_with("line 3: the range ends at 200, before it begins at 500 (line 2)"), "{e}");
        assert!(TimeRanges::parse("THREAD_BEGIN 1 7\nTHREAD_END 1 7\n").is_ok());
    }
}
