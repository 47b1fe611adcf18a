//! `rperf record` options in the device simpleperf's spelling, for recordings made with the
//! device's own simpleperf (see `choose`). Options simpleperf lacks are refused, by name.

use anyhow::bail;

/// Options spelled the same by both, with a value.
const SAME_WITH_VALUE: [&str; 6] = ["-e", "-c", "-m", "--duration", "--size-limit", "--cpu"];
/// Options spelled the same by both, without a value.
const SAME_ALONE: [&str; 3] = ["--no-inherit", "--trace-offcpu", "--exclude-perf"];
/// rperf's long spellings, as simpleperf's short ones.
const RENAMED: [(&str, &str); 6] = [
    ("--event", "-e"),
    ("--count", "-c"),
    ("--mmap-pages", "-m"),
    ("-F", "-f"),
    ("--freq", "-f"),
    ("-k", "--clockid"),
];

/// `rperf record` options (after `--` on `rperf android record`) for `simpleperf record`.
pub fn translate(options: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut it = options.iter().peekable();
    while let Some(arg) = it.next() {
        // `--name=value` is `--name value`.
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> anyhow::Result<String> {
            match inline.clone().or_else(|| it.next().cloned()) {
                Some(v) => Ok(v),
                None => bail!("{name} needs a value"),
            }
        };
        match name {
            "-g" => {
                // `-g` alone is DWARF for both; `-g fp` is rperf's spelling of `--call-graph fp`.
                let mode = it.next_if(|n| *n == "fp" || *n == "dwarf" || n.starts_with("dwarf,"));
                match mode {
                    Some(m) => out.extend(["--call-graph".to_string(), m.clone()]),
                    None => out.push("-g".into()),
                }
            }
            "--call-graph" => out.extend(["--call-graph".to_string(), value(name)?]),
            "-f" | "--clockid" => out.extend([name.to_string(), value(name)?]),
            "--post-unwind" => out.push("--post-unwind=yes".into()),
            "--no-post-unwind" => out.push("--post-unwind=no".into()),
            n if SAME_WITH_VALUE.contains(&n) => out.extend([n.to_string(), value(n)?]),
            n if SAME_ALONE.contains(&n) => out.push(n.to_string()),
            n if RENAMED.iter().any(|(r, _)| *r == n) => {
                let to = RENAMED.iter().find(|(r, _)| *r == n).map(|(_, s)| *s).expect("found");
                out.extend([to.to_string(), value(n)?]);
            }
            "-o" | "--output" | "-p" | "--pid" | "-t" | "--tid" | "-a" | "--all-cpus" | "--app" => bail!(
                "{name}: rperf android record sets what is recorded and where (--app, -np, --system-wide, -o); \
                 leave it out of the options after --"
            ),
            other => bail!(
                "{other}: the device's simpleperf has no such option; leave it out, or record with rperf \
                 (--recorder rperf; the app must be debuggable, or the device rooted)"
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn t(args: &[&str]) -> anyhow::Result<Vec<String>> {
        translate(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn rperf_options_in_simpleperfs_spelling() {
        let got = t(&["-g", "fp", "-F", "999", "--duration=2.5", "--event", "cpu-clock:u", "-g"]).unwrap();
        assert_eq!(got, ["--call-graph", "fp", "-f", "999", "--duration", "2.5", "-e", "cpu-clock:u", "-g"]);
        let got =
            t(&["--call-graph=dwarf,8192", "--no-post-unwind", "-k", "boottime", "--trace-offcpu"]).unwrap();
        assert_eq!(
            got,
            ["--call-graph", "dwarf,8192", "--post-unwind=no", "--clockid", "boottime", "--trace-offcpu"]
        );
        let err = t(&["--control", "fifo:a,b"]).unwrap_err().to_string();
        assert!(err.contains("--control: the device's simpleperf has no such option"), "{err}");
        assert!(t(&["-o", "x.data"]).unwrap_err().to_string().contains("leave it out"));
        assert!(t(&["--duration"]).unwrap_err().to_string().contains("needs a value"));
    }
}
