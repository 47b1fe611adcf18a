//! What symbolization left out of a report and why (a debug section refused, a unit cut), for
//! the report to say: each note once, in the order first met.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
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

/// The files something was left out of (kept for the process's life: `take` does not clear it).
static LEFT_OUT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Notes `why` something of `file` was left out: said once, and remembered of the file, whose
/// lookups are then not kept in the cache folder (a later report reading them back would not
/// say it again).
pub fn note_about(file: &Path, why: String) {
    LEFT_OUT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(file.to_path_buf());
    note(why);
}

/// Whether something of `file` was left out (`note_about`).
pub fn left_out_of(file: &Path) -> bool {
    LEFT_OUT.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|s| s.contains(file))
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
