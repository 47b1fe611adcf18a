//! HEADER_TRACING_DATA: the tracefs format descriptions of the recorded tracepoints, which perf
//! needs to decode their raw fields (the layout of perf's trace-event-info.c).

use std::path::Path;

use rperf_perfdata::encode::{put_u32, put_u64};

/// Builds the tracing-data feature for tracepoints given as `system:name`. None when tracefs
/// cannot be read.
pub fn tracing_data(tracepoints: &[String]) -> Option<Vec<u8>> {
    let root = crate::event::tracefs_root()?;
    let events = root.join("events");
    let mut out = Vec::new();
    out.extend_from_slice(b"\x17\x08\x44tracing");
    out.extend_from_slice(b"0.6\0");
    out.push(u8::from(cfg!(target_endian = "big")));
    out.push(std::mem::size_of::<libc::c_long>() as u8);
    put_u32(&mut out, crate::sys::page_size() as u32);
    for name in ["header_page", "header_event"] {
        let data = read_tracefs(&events.join(name)).unwrap_or_default();
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        put_u64(&mut out, data.len() as u64);
        out.extend_from_slice(&data);
    }
    put_u32(&mut out, 0); // ftrace's own formats: none needed
    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for tp in tracepoints {
        let Some((sys, name)) = tp.split_once(':') else { continue };
        let format = read_format(&events, sys, name)?;
        match systems.iter_mut().find(|(s, _)| s == sys) {
            Some((_, list)) => list.push(format),
            None => systems.push((sys.to_string(), vec![format])),
        }
    }
    put_u32(&mut out, systems.len() as u32);
    for (sys, formats) in &systems {
        out.extend_from_slice(sys.as_bytes());
        out.push(0);
        put_u32(&mut out, formats.len() as u32);
        for f in formats {
            put_u64(&mut out, f.len() as u64);
            out.extend_from_slice(f);
        }
    }
    put_u32(&mut out, 0); // kallsyms: stored separately
    put_u32(&mut out, 0); // printk formats
    put_u64(&mut out, 0); // saved cmdlines
    Some(out)
}

fn read_format(events: &Path, sys: &str, name: &str) -> Option<Vec<u8>> {
    read_tracefs(&events.join(sys).join(name).join("format")).ok()
}

/// Reads a tracefs file whole. Some of them (`header_page`) answer a short first read with
/// that much and then end-of-file, so reads start with a buffer larger than any of them.
fn read_tracefs(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&buf[..n]),
        }
    }
}
