//! `librperf_report.so`: rperf's report pipeline behind the C interface of simpleperf's report
//! library (`libsimpleperf_report.so`), so that simpleperf's Python scripts and scripts written
//! on `simpleperf_report_lib.py` read recordings through rperf.
//!
//! A handle (`CreateReportLib`) takes its settings first (record file, symfs, filters,
//! off-CPU mode...); the first call that needs samples reads the whole recording with
//! `rperf_report::load_with`, as `rperf report` reads it (same names, filters and weights),
//! keeping each sample's frame places. Samples then come one by one, in time order.
//!
//! Lookups beside the samples (`lookups.rs`): counters, process names, threads, build ids and a
//! binary's symbols. With `SetETMCallback`, the recording's ETM trace is decoded first
//! (`etm.rs`, on `rperf-etm`), each trace element handed to the caller's function.
//!
//! Every pointer handed out stays valid until the next call on the same handle (names and
//! feature sections until the handle is destroyed), as the scripts expect. Bad arguments,
//! unreadable or damaged files give an error return and a message on stderr; no call unwinds
//! into the caller.

#![allow(non_snake_case)] // The exported names are simpleperf's.

mod api;
mod ctypes;
mod etm;
mod frames;
mod lookups;

pub use api::*;
