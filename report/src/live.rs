//! A live report: the profile of a recording still being written, brought up to date as it
//! grows. The records written since the last look go through the converter that took the
//! earlier ones, so each look reads only what is new; the profile so far is symbolized for
//! each look while the converter goes on (`rperf top`).

use crate::convert::{Converter, Tally};
use crate::load::Recording;
use crate::options::ReportOptions;
use crate::profile::{Info, Profile};
use crate::records::RecordReader;
use crate::Error;

/// A recording followed as it grows.
pub struct Live {
    converter: Converter,
    reader: RecordReader,
    tally: Tally,
    info: Info,
}

impl Live {
    /// Opens `opts.input`, a recording that may still be written, for a live report; its
    /// metadata (events, the kernel's mapping) must be in it already.
    pub fn open(opts: &ReportOptions) -> Result<Live, Error> {
        // A live display shows the selected row's callers.
        let load = opts.load_config(crate::Needs { callers: true, ..opts.needs() });
        let mut rec: Recording = crate::load::open(&load)?;
        let mut converter = Converter::new(&mut rec, &load, &opts.profile_config())?;
        converter.follow();
        let info = crate::convert::info(&rec, &opts.input);
        let mut reader = rec.records;
        reader.follow();
        Ok(Live { converter, reader, tally: Tally::default(), info })
    }

    /// Reads the records written since the last look; returns how many records were read in
    /// all. A record the file cannot hold stops the reading with an error.
    pub fn update(&mut self) -> Result<u64, Error> {
        self.reader.catch_up();
        loop {
            let batch = self.reader.next_batch();
            let caught_up = batch.is_empty();
            self.converter.take(&batch, &mut self.tally);
            match batch.end {
                Some(Err(reason)) => {
                    return Err(Error::Format { path: self.info.input.clone(), reason: reason.into() })
                }
                Some(Ok(())) => break,
                None if caught_up => break,
                None => {}
            }
        }
        Ok(self.tally.records)
    }

    /// The profile of the records read so far.
    pub fn profile(&mut self) -> Profile {
        self.converter.snapshot(self.info.clone())
    }
}
