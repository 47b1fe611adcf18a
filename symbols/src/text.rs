//! Names quoted from outside (binaries, recordings, processes, control input) made safe to
//! show: every output and every message goes through `printable`.

use std::borrow::Cow;

/// `s` with the characters a line of text cannot carry written as escapes: control characters
/// (newlines, escape sequences, NUL) become `\xNN` or `\u{NNNN}`. Names come from recordings,
/// so a binary or thread name must not end a folded line, make an SVG malformed XML or send
/// escape sequences to a terminal.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if c.is_control() && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` made printable and cut to at most `max` characters (an ellipsis says it was cut): for
/// input of any length quoted back in a message.
pub fn printable_cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}… ({} bytes)", printable(&s[..at]), s.len()),
        None => printable(s).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn printable_escapes_control_characters() {
        assert_eq!(super::printable("main"), "main");
        assert_eq!(super::printable("a\nb\x1b[31m\u{85}"), "a\\x0ab\\x1b[31m\\u{0085}");
    }

    #[test]
    fn long_input_is_cut() {
        assert_eq!(super::printable_cut("abcdef", 3), "abc… (6 bytes)");
        assert_eq!(super::printable_cut("ab\x1b", 3), "ab\\x1b");
    }
}
