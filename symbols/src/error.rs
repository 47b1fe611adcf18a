//! The errors of loading symbol sources.

/// Errors of loading symbol sources.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not an ELF file this reader understands.
    #[error("{path}: not a readable ELF file: {reason}")]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
}
