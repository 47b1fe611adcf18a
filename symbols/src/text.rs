//! Names quoted from outside (binaries, recordings, processes, control input) made safe to
//! show: every output and every message goes through `printable`.

use std::borrow::Cow;

/// `s` with the characters a line of text cannot carry written as escapes: control characters
/// (newlines, escape sequences, NUL) become `\xNN` or `\u{NNNN}`. Names come from recordings,
/// so a binary or thread name must not end a folded line, make an SVG malformed XML or send
/// escape sequences to a terminal.
pub fn printable(s: &str) -> Cow<'_, str> {
    // Control characters are U+0000–U+001F and U+007F–U+009F: bytes under 0x20, 0x7f, or
    // 0xc2 then 0x80–0x9f. A name without those bytes is looked at no further (every row of
    // a report asks).
    let may_hold = |b: &u8| *b < 0x20 || *b == 0x7f || *b == 0xc2;
    if !s.as_bytes().iter().any(may_hold) || !s.chars().any(char::is_control) {
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
        // Characters near the control ones, and ones whose encodings share their bytes.
        assert_eq!(super::printable("\u{a0}é\u{80}"), "\u{a0}é\\u{0080}");
        assert_eq!(super::printable("日本\u{9f}\u{7f}\u{1f}x"), "日本\\u{009f}\\x7f\\x1fx");
        assert_eq!(super::printable("\u{a0}é~ÿ"), "\u{a0}é~ÿ");
    }

    #[test]
    fn long_input_is_cut() {
        assert_eq!(super::printable_cut("abcdef", 3), "abc… (6 bytes)");
        assert_eq!(super::printable_cut("ab\x1b", 3), "ab\\x1b");
    }
}
