//! What symbolization left out of a report and why (a debug section refused, a unit cut), for
//! the report to say: each note once, in the order first met.

use std::sync::Mutex;

/// The most notes kept; past them, only how many more there were.
const MOST: usize = 32;

static NOTES: Mutex<(Vec<String>, usize)> = Mutex::new((Vec::new(), 0));

/// Notes `why` (once).
pub fn note(why: String) {
    let mut notes = NOTES.lock().unwrap_or_else(|e| e.into_inner());
    if notes.0.contains(&why) {
        return;
    }
    if notes.0.len() < MOST {
        notes.0.push(why);
    } else {
        notes.1 += 1;
    }
}

/// The notes so far, taken: the next call gets only newer ones.
pub fn take() -> Vec<String> {
    let mut notes = NOTES.lock().unwrap_or_else(|e| e.into_inner());
    let (mut list, more) = std::mem::take(&mut *notes);
    if more > 0 {
        list.push(format!("{more} more debug-info problems like those above"));
    }
    list
}
