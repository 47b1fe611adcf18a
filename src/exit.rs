//! Mapping results to exit codes and messages, in one place.

/// Prints an error (if any) and returns the process exit code. A closed output pipe
/// (`rperf report | head`) counts as success.
pub fn code(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) => {
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return 0;
            }
            // The chain's causes, each once: rperf's messages already quote the OS error they wrap.
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let text = cause.to_string();
                if !msg.contains(&text) {
                    msg = format!("{msg}: {text}");
                }
            }
            // Messages quote names from outside (paths, comms, control input): nothing reaches the
            // terminal raw.
            crate::log::say(crate::log::Level::Error, &format!("rperf: error: {msg}"));
            1
        }
    }
}

/// Says what symbolization left out while the output was written (outputs that name frames as
/// they go, `annotate`'s source lines), after the output.
pub fn late_symbol_notes() {
    let late: Vec<_> = rperf_symbols::notes::take().into_iter().map(rperf_report::Warning::Symbols).collect();
    warnings(&late, None);
}

/// Prints a report's warnings, each as one escaped line, naming the recording they are about
/// when a command reads more than one (`report --diff`).
pub fn warnings(warnings: &[rperf_report::Warning], about: Option<&std::path::Path>) {
    for w in warnings {
        let text = match about {
            Some(path) => format!("{}: {w}", path.display()),
            None => w.to_string(),
        };
        eprintln!("rperf: warning: {}", rperf_symbols::text::printable(&text));
    }
}
