//! JSON Lines output for scripts: one object per sample, written as it goes, with the sample's
//! symbolized stack (like simpleperf's report-sample). The schema is in README.md.
//!
//! ```text
//! {"event":"cpu-clock","time":1234,"pid":7,"tid":7,"comm":"app","cpu":0,"period":250000,
//!  "stack":[{"symbol":"leaf","dso":"/usr/bin/app","file":"app.c","line":12,"inlined":false,
//!            "execution_type":"native_method","jit":false},...]}
//! ```

use std::io::{self, Write};

use serde_json::{json, Value};

use crate::profile::Profile;

/// Writes one line per sample, sections in order, samples in time order per section.
pub fn write(out: &mut dyn Write, p: &Profile) -> io::Result<()> {
    let names = &p.names;
    // Each distinct stack is rendered once.
    let mut rendered: Vec<Option<Value>> = vec![None; p.stacks.len()];
    for s in &p.sections {
        for row in &s.rows {
            let stack = rendered[row.stack as usize].get_or_insert_with(|| {
                let mut frames = Vec::new();
                let execs = &p.stack_exec[row.stack as usize];
                for (&a, exec) in p.stacks[row.stack as usize].iter().zip(execs) {
                    let places = p.symbols.places(a);
                    for (i, &f) in p.symbols.funcs(a).iter().enumerate() {
                        let func = names.func(f);
                        let (file, line) = places.get(i).copied().unwrap_or((0, 0));
                        frames.push(json!({
                            "symbol": names.func_name(f),
                            "dso": names.dso_of(f).display_name(),
                            "file": (file > 0).then(|| names.files[file as usize - 1].as_str()),
                            "line": (line > 0).then_some(line),
                            "inlined": func.inlined,
                            "execution_type": exec.name(),
                            "jit": names.dso_of(f).kind.is_jit(),
                        }));
                    }
                }
                Value::Array(frames)
            });
            let record = json!({
                "event": s.name,
                "time": row.time,
                "pid": row.thread.pid,
                "tid": row.thread.tid,
                "comm": names.comm(row.thread.comm),
                "cpu": row.cpu,
                "period": row.weight,
                "off_cpu": row.off_cpu,
                "stack": stack,
            });
            serde_json::to_writer(&mut *out, &record)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}
