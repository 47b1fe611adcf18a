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
            eprintln!("rperf: error: {e:#}");
            1
        }
    }
}
