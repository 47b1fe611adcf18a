//! What was repaired so that a damaged recording could be read, and where in the file.

/// A repair made while opening or reading a recording.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Repaired {
    /// The event-types section reaches past the end of the file; it is ignored.
    #[error("the event-types section (header offset 56) reaches past the end of the file; ignored")]
    EventTypesPastEnd,
    /// A record before the end of the data claims trace data past it; the records before it are read.
    #[error(
        "the AUXTRACE record at file offset {at} claims {claimed} bytes of trace data, past the end of the data section; reading the records before it"
    )]
    RecordsCutAt {
        /// The record's file offset.
        at: u64,
        /// The trace data's size it claims.
        claimed: u64,
    },
    /// The data section is larger than what the file holds: a recording cut short.
    #[error(
        "the data section (header offset 48) claims {claimed} bytes but the file holds {present} after offset {offset}: the recording was cut short; reading what is there ({whole} bytes of whole records)"
    )]
    DataCut {
        /// The size the header gives.
        claimed: u64,
        /// The bytes after the data section's start.
        present: u64,
        /// The data section's file offset.
        offset: u64,
        /// The bytes of whole records read.
        whole: u64,
    },
    /// The feature sections after the data are missing.
    #[error(
        "the feature sections after the data (file offset {offset}) are missing: the recording was cut short; reading the records only"
    )]
    FeaturesMissing {
        /// Where they were to start.
        offset: u64,
    },
    /// A feature section that cannot be read; it is ignored.
    #[error("feature section {feature} (table entry at file offset {entry_at}) {why}; ignored")]
    FeatureIgnored {
        /// Its feature id.
        feature: u32,
        /// The file offset of its table entry.
        entry_at: u64,
        /// What is wrong with it.
        why: String,
    },
    /// An attribute's or event type's id list reaches past the end of the file; it is ignored.
    #[error(
        "the id list of {what} {index} (file offset {field}) claims {size} bytes at offset {offset}, past the end of the file; ignored"
    )]
    IdListPastEnd {
        /// `attribute` or `event type`.
        what: &'static str,
        /// Which one.
        index: usize,
        /// The file offset of the list's (offset, size) field.
        field: u64,
        /// The size it claims.
        size: u64,
        /// The offset it claims.
        offset: u64,
    },
    /// An AUXTRACE record whose trace data reaches past the data section; the data is cut.
    #[error(
        "the AUXTRACE record at file offset {at} claims {claimed} bytes of trace data, past the end of the data section; its trace data is cut to the {left} bytes that follow it"
    )]
    AuxtraceCut {
        /// The record's file offset.
        at: u64,
        /// The trace data's size it claims.
        claimed: u64,
        /// The bytes left in the data section after it.
        left: u64,
    },
}
