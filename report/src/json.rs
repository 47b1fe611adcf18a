//! JSON Lines output for scripts: one object per sample, written as it goes, with the sample's
//! symbolized stack (like simpleperf's report-sample). The schema is in README.md.
//!
//! ```text
//! {"event":"cpu-clock","time":1234,"pid":7,"tid":7,"comm":"app","cpu":0,"period":250000,
//!  "stack":[{"symbol":"leaf","dso":"/usr/bin/app","file":"app.c","line":12,"inlined":false},...]}
//! ```

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::options::ReportOptions;
use crate::run::Profile;

/// Writes one line per sample, events in file order, samples in time order per event.
pub fn write(out: &mut dyn Write, p: &Profile, opts: &ReportOptions) -> io::Result<()> {
    let names = p.names();
    // Each distinct stack is rendered once.
    let mut rendered: Vec<Option<(bool, Value)>> = vec![None; p.sample_stacks.len()];
    for e in &p.events {
        for row in &e.rows {
            let slot = &mut rendered[row.stack as usize];
            if slot.is_none() {
                let addrs = &p.sample_stacks[row.stack as usize];
                let mut frames = Vec::new();
                let mut leaf = None;
                for &a in addrs {
                    let places = p.symbolized.places(a);
                    for (i, &f) in p.symbolized.funcs(a).iter().enumerate() {
                        leaf.get_or_insert(f);
                        let func = &p.resolver.funcs[f as usize];
                        let (file, line) = places.get(i).copied().unwrap_or((0, 0));
                        frames.push(json!({
                            "symbol": names.func_name(f),
                            "dso": p.model.dsos[func.dso as usize].display_name(),
                            "file": (file > 0).then(|| p.resolver.files[file as usize - 1].as_str()),
                            "line": (line > 0).then_some(line),
                            "inlined": func.inlined,
                        }));
                    }
                }
                let keep = leaf.is_some_and(|l| crate::run::leaf_matches(opts, &p.model, &p.resolver, l));
                *slot = Some((keep, Value::Array(frames)));
            }
            let Some((true, stack)) = slot else { continue };
            let record = json!({
                "event": e.name,
                "time": row.time,
                "pid": row.pid,
                "tid": row.tid,
                "comm": names.comm(row.comm),
                "cpu": row.cpu,
                "period": row.period,
                "stack": stack,
            });
            serde_json::to_writer(&mut *out, &record)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
