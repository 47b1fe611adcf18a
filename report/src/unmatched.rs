//! Filters that match nothing: which values of `--comms`, `--pids`, `--tids`, `--cpu`,
//! `--dsos`, `--symbols`, `--time` and the name patterns no sample of the recording could pass,
//! each with what the recording holds instead (the closest names first), so that a filtered
//! report is never silently empty.

use std::collections::BTreeSet;

use crate::options::{names_dso, Filters};
use crate::profile::{Offered, Profile, Thread};

/// The threads, processes and CPUs of the samples offered to the filters (before filtering),
/// as the builder meets them; kept only when a filter on them was given.
#[derive(Clone, Debug, Default)]
pub(crate) struct OfferedIds {
    watch: bool,
    samples: u64,
    comms: rustc_hash::FxHashSet<u32>,
    pids: rustc_hash::FxHashSet<i32>,
    tids: rustc_hash::FxHashSet<i32>,
    cpus: rustc_hash::FxHashSet<u32>,
}

impl OfferedIds {
    pub(crate) fn new(filters: &Filters) -> OfferedIds {
        let f = filters;
        let watch = !(f.comms.is_empty()
            && f.pids.is_empty()
            && f.tids.is_empty()
            && f.cpus.is_empty()
            && f.thread_names.is_empty()
            && f.process_names.is_empty());
        OfferedIds { watch, ..Default::default() }
    }

    /// A sample of `thread` on `cpu` met the filters.
    pub(crate) fn note(&mut self, thread: Thread, cpu: u32) {
        self.samples = self.samples.saturating_add(1);
        if self.watch {
            self.comms.insert(thread.comm);
            self.pids.insert(thread.pid);
            self.tids.insert(thread.tid);
            self.cpus.insert(cpu);
        }
    }

    /// With the thread names of the recording's strings.
    pub(crate) fn named(self, strings: &[String]) -> Offered {
        Offered {
            samples: self.samples,
            comms: self.comms.iter().filter_map(|&c| strings.get(c as usize).cloned()).collect(),
            pids: self.pids.into_iter().collect(),
            tids: self.tids.into_iter().collect(),
            cpus: self.cpus.into_iter().collect(),
        }
    }
}

/// A filter value that no sample of the recording matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    /// The option, as the command line spells it (`--comms`).
    pub option: &'static str,
    /// The value that matched nothing.
    pub value: String,
    /// What the recording holds instead, closest first.
    pub hint: String,
}

/// How the filters fared on a recording.
#[derive(Clone, Debug, Default)]
pub struct FilterOutcome {
    /// The values that matched no sample.
    pub misses: Vec<Miss>,
    /// The recording has samples, and none of them passes the filters.
    pub empty: bool,
}

impl Profile {
    /// Which values of `filters` (the options the profile was made with) match no sample of
    /// the recording, and whether the filters leave no sample at all.
    pub fn filter_outcome(&self, f: &Filters) -> FilterOutcome {
        let o = &self.offered;
        let mut misses = Vec::new();
        let mut miss = |option, value: String, hint: String| misses.push(Miss { option, value, hint });
        let names = &self.names;
        for c in f.comms.iter().filter(|c| !o.comms.contains(*c)) {
            miss("--comms", c.clone(), listing("threads with samples are named", c, &o.comms));
        }
        for p in f.pids.iter().filter(|p| !o.pids.contains(p)) {
            miss("--pids", p.to_string(), numbers("samples were taken in processes", &o.pids));
        }
        for t in f.tids.iter().filter(|t| !o.tids.contains(t)) {
            miss("--tids", t.to_string(), numbers("samples were taken in threads", &o.tids));
        }
        for c in f.cpus.iter().filter(|c| !o.cpus.contains(c)) {
            miss("--cpu", c.to_string(), numbers("samples were taken on CPUs", &o.cpus));
        }
        for (option, res) in
            [("--include-thread-name", &f.thread_names), ("--include-process-name", &f.process_names)]
        {
            for r in res.iter().filter(|r| !o.comms.iter().any(|c| r.is_match(c))) {
                miss(
                    option,
                    r.as_str().to_string(),
                    listing("threads with samples are named", r.as_str(), &o.comms),
                );
            }
        }
        let used: BTreeSet<u32> = names.funcs.iter().map(|x| x.dso).collect();
        let dsos = || used.iter().map(|&i| &names.dsos[i as usize]);
        for d in f.dsos.iter().filter(|d| !dsos().any(|x| names_dso(d, x))) {
            let dsos = dsos().map(|x| x.display_name().to_string()).collect();
            miss("--dsos", d.clone(), listing("binaries with samples", d, &dsos));
        }
        for s in &f.symbols {
            let one = Filters { symbols: vec![s.clone()], ..Filters::default() };
            if one.select(names).is_some_and(|sel| !sel.contains(&true)) {
                let funcs: BTreeSet<String> = names.funcs.iter().map(|x| x.name.clone()).collect();
                miss("--symbols", s.clone(), listing("functions with samples", s, &funcs));
            }
        }
        let kept: u64 = self.sections.iter().map(|s| s.samples).sum();
        let empty = o.samples > 0 && kept == 0;
        if empty && f.dsos.is_empty() && f.symbols.is_empty() {
            if let Some((start, end)) = f.time {
                let (first, last) = self.info.time_range;
                let secs = |t: u64| t.saturating_sub(first) as f64 / 1e9;
                let value = format!(
                    "{},{}",
                    start.map_or(String::new(), |b| format!("{:.3}", secs(b.at(first)))),
                    end.map_or(String::new(), |b| format!("{:.3}", secs(b.at(first))))
                );
                miss("--time", value, format!("the samples span 0.000 to {:.3} s", secs(last)));
            }
        }
        FilterOutcome { misses, empty }
    }
}

/// `what: a, b, c (N in all)`: the names closest to `value` first (those containing it, then
/// by edit distance), at most eight.
fn listing(what: &str, value: &str, names: &BTreeSet<String>) -> String {
    if names.is_empty() {
        return format!("{what}: none");
    }
    let lower = value.to_lowercase();
    let mut ranked: Vec<(bool, usize, &String)> = names
        .iter()
        .map(|n| (!n.to_lowercase().contains(&lower), strsim::levenshtein(value, n), n))
        .collect();
    ranked.sort();
    let shown: Vec<String> =
        ranked.iter().take(8).map(|(_, _, n)| crate::escape::printable(n).into_owned()).collect();
    let more = if names.len() > shown.len() { format!(" ({} in all)", names.len()) } else { String::new() };
    format!("{what}: {}{more}", shown.join(", "))
}

/// `what 1, 2, 3 (N in all)`, at most twelve.
fn numbers<T: std::fmt::Display>(what: &str, values: &BTreeSet<T>) -> String {
    if values.is_empty() {
        return format!("{what}: none");
    }
    let shown: Vec<String> = values.iter().take(12).map(T::to_string).collect();
    let more = if values.len() > shown.len() { format!(" ({} in all)", values.len()) } else { String::new() };
    format!("{what} {}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_names_come_first() {
        let names: BTreeSet<String> = ["main", "hot_loop", "hot_loop_2", "memcpy"].map(String::from).into();
        assert_eq!(listing("functions", "hot", &names), "functions: hot_loop, hot_loop_2, main, memcpy");
        assert_eq!(listing("functions", "mian", &names), "functions: main, memcpy, hot_loop, hot_loop_2");
        assert_eq!(numbers("CPUs", &BTreeSet::from([0u32, 1])), "CPUs 0, 1");
    }
}
