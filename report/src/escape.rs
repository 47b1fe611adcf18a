//! Text quoted from a recording or a binary, made safe for the terminal and for HTML.

pub(crate) use rperf_symbols::text::printable;

/// `s` as HTML text or an attribute value (the HTML report and `rperf annotate --format html`).
pub(crate) fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
