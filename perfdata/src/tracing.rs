//! The tracing data section (`HEADER_TRACING_DATA`): the formats of the recorded tracepoints, as
//! the kernel describes them in tracefs (`events/SYSTEM/NAME/format`), so that a reader can
//! take apart each sample's raw data into named fields.
//!
//! Layout (perf's `trace-event-read.c`): `\x17\x08\x44tracing`, a version string ending in
//! NUL, an endianness byte (1: big), the size of a long, the page size (u32), the
//! `header_page` and `header_event` files (name, NUL, u64 size, text), the ftrace formats (u32
//! count, then u64 size and text each), the event formats (u32 count of systems; per system its
//! name, NUL, a u32 count, then u64 size and text each), then kallsyms, printk formats and,
//! from version 0.6, the saved command lines. Only what comes before kallsyms is read here.

/// The most raw data a sample can hold: a record's size is 16 bits.
pub const MAX_RAW: u32 = u16::MAX as u32;

/// One field of a tracepoint's raw data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its offset in the raw data.
    pub offset: u32,
    /// The size of one element.
    pub elem_size: u32,
    /// How many elements (more than one for arrays).
    pub elem_count: u32,
    /// The element type is signed.
    pub signed: bool,
    /// A `__data_loc` field: a u16 offset and a u16 length of a string elsewhere in the data.
    pub dynamic: bool,
}

/// A tracepoint's format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// `system:name`.
    pub name: String,
    /// Its id (the `config` of its perf_event_attr).
    pub id: u64,
    /// Its fields, in order.
    pub fields: Vec<Field>,
}

/// The tracepoint formats of a tracing data section; what cannot be read is left out.
pub fn decode_formats(section: &[u8]) -> Vec<EventFormat> {
    let mut r = Reader { data: section, at: 0, big: false };
    read_formats(&mut r).unwrap_or_default()
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    big: bool,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.data.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(b)
    }

    fn cstr(&mut self) -> Option<&'a str> {
        let len = self.data.get(self.at..)?.iter().position(|&b| b == 0)?;
        let s = std::str::from_utf8(self.bytes(len)?).ok();
        self.at += 1;
        s
    }

    fn u32(&mut self) -> Option<u32> {
        let b: [u8; 4] = self.bytes(4)?.try_into().ok()?;
        Some(if self.big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
    }

    fn u64(&mut self) -> Option<u64> {
        let b: [u8; 8] = self.bytes(8)?.try_into().ok()?;
        Some(if self.big { u64::from_be_bytes(b) } else { u64::from_le_bytes(b) })
    }

    fn sized(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.bytes(n)
    }
}

fn read_formats(r: &mut Reader<'_>) -> Option<Vec<EventFormat>> {
    if r.bytes(10)? != b"\x17\x08\x44tracing" {
        return None;
    }
    r.cstr()?;
    r.big = r.bytes(1)?[0] != 0;
    r.bytes(1)?;
    r.u32()?;
    for header in ["header_page", "header_event"] {
        if r.cstr()? != header {
            return None;
        }
        r.sized()?;
    }
    for _ in 0..r.u32()? {
        r.sized()?;
    }
    let mut out = Vec::new();
    for _ in 0..r.u32()? {
        let system = r.cstr()?.to_string();
        for _ in 0..r.u32()? {
            let text = String::from_utf8_lossy(r.sized()?);
            if let Some(f) = parse_format(&system, &text) {
                out.push(f);
            }
        }
    }
    Some(out)
}

/// One tracefs `format` file.
fn parse_format(system: &str, text: &str) -> Option<EventFormat> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("name:") {
            name = Some(n.trim().to_string());
        } else if let Some(i) = line.strip_prefix("ID:") {
            id = i.trim().parse().ok();
        } else if line.starts_with("field:") {
            fields.extend(parse_field(line));
        }
    }
    Some(EventFormat { name: format!("{system}:{}", name?), id: id?, fields })
}

/// `field:unsigned char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;`
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';').map(str::trim) {
        if let Some(d) = part.strip_prefix("field:") {
            decl = Some(d.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl?;
    let size: u32 = size?;
    let dynamic = decl.starts_with("__data_loc");
    let (head, count) = match decl.rfind('[') {
        Some(open) if decl.ends_with(']') && !dynamic => {
            (&decl[..open], decl[open + 1..decl.len() - 1].trim().parse::<u32>().ok().filter(|c| *c > 0))
        }
        _ => (decl.trim_end_matches("[]"), None),
    };
    let name = head.rsplit([' ', '*']).next()?.to_string();
    let elem_count = count.unwrap_or(1);
    let offset: u32 = offset?;
    // A field no sample's raw data can hold is no field: readers would index past the data.
    if offset.checked_add(size).is_none_or(|end| end > MAX_RAW) {
        return None;
    }
    Some(Field { name, offset, elem_size: size / elem_count, elem_count, signed, dynamic })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_files_give_fields() {
        let text = "name: sched_switch\nID: 316\nformat:\n\
            \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
            \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:1;\n\
            \tfield:__data_loc char[] name;\toffset:24;\tsize:4;\tsigned:1;\n\
            \tfield:const char * ip;\toffset:28;\tsize:8;\tsigned:0;\n\nprint fmt: \"\"\n";
        let f = parse_format("sched", text).unwrap();
        assert_eq!((f.name.as_str(), f.id), ("sched:sched_switch", 316));
        let names: Vec<_> =
            f.fields.iter().map(|f| (f.name.as_str(), f.elem_size, f.elem_count, f.dynamic)).collect();
        assert_eq!(
            names,
            [
                ("common_type", 2, 1, false),
                ("prev_comm", 1, 16, false),
                ("name", 4, 1, true),
                ("ip", 8, 1, false)
            ]
        );
        assert!(decode_formats(b"garbage").is_empty());
    }

    #[test]
    fn fields_past_any_raw_data_are_dropped() {
        let text = "name: e\nID: 7\nformat:\n\
            \tfield:int near;\toffset:8;\tsize:4;\tsigned:1;\n\
            \tfield:int far;\toffset:2000000028;\tsize:4;\tsigned:1;\n\
            \tfield:char wraps[4];\toffset:4294967295;\tsize:4;\tsigned:1;\n\
            \tfield:char edge[8];\toffset:65527;\tsize:8;\tsigned:1;\n";
        let f = parse_format("s", text).unwrap();
        let names: Vec<_> = f.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["near", "edge"]);
    }
}
