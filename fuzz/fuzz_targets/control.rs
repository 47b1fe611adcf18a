//! `rperf record --control` input: any bytes, in pieces of any size. Lines are bounded, and
//! how the input is cut into reads changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rperf_record::{ControlLine, ControlLines};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else { return };
    let mut whole = ControlLines::default();
    let at_once = whole.feed(input);
    let mut pieces = ControlLines::default();
    let mut in_pieces = Vec::new();
    for chunk in input.chunks(usize::from(cut).max(1)) {
        in_pieces.extend(pieces.feed(chunk));
        assert!(pieces.held() <= 256);
    }
    assert_eq!(at_once, in_pieces);
    for line in at_once {
        match line {
            ControlLine::Command(c) => assert!(!c.is_empty() && c.len() <= 3 * 256 && c.trim() == c),
            ControlLine::TooLong(start) => assert!(start.len() <= 3 * 32),
        }
    }
});
