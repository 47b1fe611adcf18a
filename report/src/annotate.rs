//! `rperf annotate`: where inside its hottest functions a recording's samples fall, per source
//! line and per instruction, as perf annotate and simpleperf's annotate.py show it. It reads
//! the same profile as every report (filters, events, time window included), then the
//! functions' code from their binaries: instructions from a disassembler (x86_64: iced-x86,
//! arm64: yaxpeax-arm), source lines from DWARF (the innermost inlined call of each address,
//! marked as inlined). Self counts samples taken at an instruction; total also counts the
//! samples on whose stacks it is a call site.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rperf_symbols::trusted::Owners;
use rperf_symbols::{BinaryFinder, ElfInfo, Found};

use crate::escape::escape_html as escape;
use crate::profile::Profile;
use crate::resolve::{AddrId, FuncId};
use crate::ReportOptions;

/// What `annotate` needs besides a report's options.
#[derive(Clone, Debug)]
pub struct AnnotateOptions {
    /// The recording, filters, `--symfs`, `--source-dir`, event and time window.
    pub report: ReportOptions,
    /// How many functions, hottest first.
    pub functions: usize,
    /// Only these functions (by name, with or without C++ parameters), whatever their rank.
    pub symbols: Vec<String>,
    /// A self-contained HTML page instead of text.
    pub html: bool,
}

/// One instruction of an annotated function.
struct Line {
    addr: u64,
    len: u64,
    text: String,
    self_: u64,
    total: u64,
    /// `file:line` of the innermost inlined call at this address, and the inlined function.
    srcline: Option<String>,
    inlined: Option<String>,
    source: Option<String>,
}

/// One annotated function.
struct Annotated {
    name: String,
    binary: String,
    self_: u64,
    total_section: u64,
    lines: Vec<Line>,
    /// Self weight per source line, largest first.
    by_line: Vec<(String, u64, bool)>,
    note: Option<String>,
}

/// Writes the annotation of the hottest functions of `p`.
pub fn annotate(p: &Profile, opts: &AnnotateOptions, out: &mut dyn Write) -> io::Result<()> {
    if p.main_section().is_none() {
        return writeln!(out, "no samples");
    }
    let done: Vec<Annotated> = hottest(p, opts).into_iter().map(|(_, a)| a).collect();
    if opts.html {
        write_html(out, p, &done)
    } else {
        write_text(out, &done)
    }
}

/// The code of a function for the HTML report.
pub struct FunctionCode {
    /// The function.
    pub func: FuncId,
    /// Its instructions, in address order.
    pub lines: Vec<CodeLine>,
}

/// One instruction.
pub struct CodeLine {
    /// Its address in the binary.
    pub addr: u64,
    /// Its length.
    pub len: u64,
    /// Its disassembly.
    pub text: String,
    /// `file:line` of the innermost inlined call there.
    pub srcline: Option<String>,
    /// The inlined function, when the line belongs to one.
    pub inlined: Option<String>,
    /// The text of that source line, when the source file is found.
    pub source: Option<String>,
}

/// The code of the `n` hottest functions of `p`, read from their binaries (under `symfs`),
/// with their source lines (under `source_dirs`).
pub fn hot_code(p: &Profile, symfs: &[PathBuf], source_dirs: &[PathBuf], n: usize) -> Vec<FunctionCode> {
    let opts = AnnotateOptions {
        report: ReportOptions {
            symfs: symfs.to_vec(),
            source_dirs: source_dirs.to_vec(),
            ..Default::default()
        },
        functions: n,
        symbols: Vec::new(),
        html: true,
    };
    hottest(p, &opts)
        .into_iter()
        .filter(|(_, a)| a.note.is_none())
        .map(|(func, a)| FunctionCode {
            func,
            lines: a
                .lines
                .into_iter()
                .map(|l| CodeLine {
                    addr: l.addr,
                    len: l.len,
                    text: l.text,
                    srcline: l.srcline,
                    inlined: l.inlined,
                    source: l.source,
                })
                .collect(),
        })
        .collect()
}

/// The hottest functions of the main section (or those `opts.symbols` names), annotated.
fn hottest(p: &Profile, opts: &AnnotateOptions) -> Vec<(FuncId, Annotated)> {
    let Some(section) = p.main_section() else { return Vec::new() };
    // Self and total weight per frame address, and self per function.
    let mut at: HashMap<AddrId, (u64, u64)> = HashMap::new();
    let mut by_func: HashMap<FuncId, u64> = HashMap::new();
    for c in &section.stacks {
        let stack = &p.stacks[c.stack as usize];
        let Some(&leaf) = stack.first() else { continue };
        // Weights come from the file: sums saturate (tests/fuzz-regressions).
        let e = at.entry(leaf).or_default();
        e.0 = e.0.saturating_add(c.weight);
        let f = *p.symbols.funcs(leaf).last().expect("an address has a function");
        let w = by_func.entry(f).or_default();
        *w = w.saturating_add(c.weight);
        let mut seen: Vec<AddrId> = Vec::with_capacity(stack.len());
        for &a in stack {
            if !seen.contains(&a) {
                seen.push(a);
                let e = at.entry(a).or_default();
                e.1 = e.1.saturating_add(c.weight);
            }
        }
    }
    let mut funcs: Vec<(FuncId, u64)> = by_func.into_iter().collect();
    funcs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if opts.symbols.is_empty() {
        funcs.truncate(opts.functions);
    } else {
        let wanted = |f: FuncId| {
            let func = p.names.func(f);
            opts.symbols.iter().any(|s| {
                *s == func.name
                    || func.system.as_deref().is_some_and(|raw| {
                        *s == raw
                            || *s == rperf_symbols::demangle(raw)
                            || *s == rperf_symbols::demangle_full(raw)
                    })
            })
        };
        funcs.retain(|(f, _)| wanted(*f));
    }
    let mut finder = BinaryFinder::new(&opts.report.symfs);
    finder.add_symdirs(&opts.report.symdirs);
    let mut binaries: HashMap<u32, Option<ElfInfo>> = HashMap::new();
    let mut done = Vec::new();
    for (f, weight) in funcs {
        let dso_id = p.names.func(f).dso;
        let elf = binaries.entry(dso_id).or_insert_with(|| {
            let d = &p.names.dsos[dso_id as usize];
            match finder.find(&d.path, d.build_id.as_deref()) {
                Found::File(path) => ElfInfo::load(&path).ok(),
                Found::Embedded { apk, entry } => {
                    ElfInfo::load_range(Path::new(&d.path), &apk, entry.offset, entry.size).ok()
                }
                _ => None,
            }
        });
        // The function's addresses with samples, in the binary's address space.
        let addrs: Vec<(u64, (u64, u64))> = at
            .iter()
            .filter(|(a, _)| p.symbols.funcs(**a).last() == Some(&f))
            .map(|(a, w)| (p.symbols.vaddr_in_file(*a), *w))
            .collect();
        done.push((f, annotate_function(p, f, weight, section.weight, elf.as_ref(), &addrs, opts)));
    }
    done
}

fn annotate_function(
    p: &Profile,
    f: FuncId,
    weight: u64,
    total_section: u64,
    elf: Option<&ElfInfo>,
    addrs: &[(u64, (u64, u64))],
    opts: &AnnotateOptions,
) -> Annotated {
    let func = p.names.func(f);
    let binary = p.names.dsos[func.dso as usize].display_name().to_string();
    let mut a = Annotated {
        name: func.name.clone(),
        binary,
        self_: weight,
        total_section,
        lines: Vec::new(),
        by_line: Vec::new(),
        note: None,
    };
    let sample_addr = addrs.iter().max_by_key(|x| (x.1).0).map(|x| x.0);
    let Some((elf, sym)) = elf.zip(sample_addr).and_then(|(e, v)| Some((e, e.symbols().lookup(v)?))) else {
        a.note = Some("its binary or its symbol was not found (pass --symfs DIR); addresses only".into());
        let mut v: Vec<_> = addrs.to_vec();
        v.sort();
        a.lines = v
            .into_iter()
            .map(|(addr, (s, t))| Line {
                addr,
                len: 1,
                text: String::new(),
                self_: s,
                total: t,
                srcline: None,
                inlined: None,
                source: None,
            })
            .collect();
        return a;
    };
    let code = elf.bytes_at(sym.start, sym.end).unwrap_or_default();
    let mut sources = Sources::new(&opts.report.source_dirs);
    let debug = elf.debug_info();
    let mut by_line: HashMap<(String, bool), u64> = HashMap::new();
    for (addr, len, text) in disassemble(&elf.data[..], code, sym.start) {
        let (mut self_, mut total) = (0, 0);
        for (v, (s, t)) in addrs {
            if *v >= addr && *v < addr.saturating_add(len) {
                self_ = u64::saturating_add(self_, *s);
                total = u64::saturating_add(total, *t);
            }
        }
        let frames = debug.map(|d| d.frames(addr)).unwrap_or_default();
        let inner = frames.first();
        let srcline =
            inner.and_then(|fr| Some(format!("{}:{}", fr.file.as_deref()?.rsplit('/').next()?, fr.line?)));
        let inlined = (frames.len() > 1)
            .then(|| inner.and_then(|fr| fr.raw_name.as_deref()).map(rperf_symbols::demangle))
            .flatten();
        let source = inner.and_then(|fr| sources.line(fr.file.as_deref()?, fr.line?));
        if let Some(l) = &srcline {
            let w = by_line.entry((l.clone(), inlined.is_some())).or_default();
            *w = w.saturating_add(self_);
        }
        a.lines.push(Line { addr, len, text, self_, total, srcline, inlined, source });
    }
    let mut by: Vec<(String, u64, bool)> = by_line.into_iter().map(|((l, i), w)| (l, w, i)).collect();
    by.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    by.retain(|x| x.1 > 0);
    a.by_line = by;
    a
}

/// Instructions of `code` (at address `start`): (address, length, text).
fn disassemble(elf: &[u8], code: &[u8], start: u64) -> Vec<(u64, u64, String)> {
    // e_machine: 62 is x86_64, 183 is aarch64.
    let machine = elf.get(18..20).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let mut out = Vec::new();
    match machine {
        62 => {
            use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction};
            let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
            let mut formatter = GasFormatter::new();
            let mut instr = Instruction::default();
            while decoder.can_decode() {
                decoder.decode_out(&mut instr);
                let mut text = String::new();
                formatter.format(&instr, &mut text);
                out.push((instr.ip(), instr.len() as u64, text));
            }
        }
        183 => {
            use yaxpeax_arch::{Decoder, U8Reader};
            let decoder = yaxpeax_arm::armv8::a64::InstDecoder::default();
            for (i, word) in code.chunks_exact(4).enumerate() {
                let mut reader = U8Reader::new(word);
                let text = match decoder.decode(&mut reader) {
                    Ok(inst) => inst.to_string(),
                    Err(_) => {
                        format!(".word {:#010x}", u32::from_le_bytes(word.try_into().expect("4 bytes")))
                    }
                };
                out.push((start.saturating_add(4 * i as u64), 4, text));
            }
        }
        _ => out.push((start, code.len().max(1) as u64, "(no disassembler for this architecture)".into())),
    }
    out
}

/// Source files, read once; a recorded path that does not exist here is looked for under the
/// source directories, by its trailing components.
struct Sources<'a> {
    dirs: &'a [PathBuf],
    files: HashMap<String, Option<Vec<String>>>,
}

impl<'a> Sources<'a> {
    fn new(dirs: &'a [PathBuf]) -> Sources<'a> {
        Sources { dirs, files: HashMap::new() }
    }

    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let dirs = self.dirs;
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            let path = Path::new(file);
            // Under --source-dir, nothing outside those folders is read: a binary's DWARF may
            // name any file (`#line 1 "/etc/shadow"`).
            let mut candidates = Vec::new();
            if dirs.is_empty() || dirs.iter().any(|d| within(path, d)) {
                candidates.push(path.to_path_buf());
            }
            let parts: Vec<_> = path.components().collect();
            for d in dirs {
                for skip in 0..parts.len() {
                    let rel: PathBuf = parts[skip..].iter().collect();
                    candidates.extend(rperf_symbols::inside(d, &rel));
                }
            }
            // The recorded path itself is read when its owner is trusted (this user or root);
            // files under the source directories the user named, whoever owns them.
            let trusted = dirs.is_empty();
            let text = candidates.into_iter().find_map(|c| {
                let owners = if trusted { Owners::Trusted(None) } else { Owners::Anyone };
                let bytes = rperf_symbols::trusted::read(&c, 64 << 20, owners, true).ok()?;
                String::from_utf8(bytes).ok()
            })?;
            Some(text.lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get((line as usize).checked_sub(1)?).map(|l| l.trim().to_string())
    }
}

/// Whether `path` is a file inside `dir`, links resolved.
fn within(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(p), Ok(d)) => p.starts_with(d),
        _ => false,
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

fn write_text(out: &mut dyn Write, funcs: &[Annotated]) -> io::Result<()> {
    let p = crate::escape::printable;
    for a in funcs {
        writeln!(
            out,
            "Annotation of {} in {} ({:.2}% of the samples)",
            p(&a.name),
            p(&a.binary),
            pct(a.self_, a.total_section)
        )?;
        if let Some(n) = &a.note {
            writeln!(out, "  {n}")?;
        }
        writeln!(out, "\nSorted summary by source line (self, % of the function):")?;
        for (line, w, inlined) in &a.by_line {
            let mark = if *inlined { " (inlined)" } else { "" };
            writeln!(out, "  {:>7.2}  {}{mark}", pct(*w, a.self_), p(line))?;
        }
        writeln!(out, "\n   Self   Total  Address  Instruction")?;
        let mut last_src: Option<&str> = None;
        for l in &a.lines {
            if let Some(s) = &l.srcline {
                if last_src != Some(s.as_str()) {
                    let inl =
                        l.inlined.as_deref().map(|f| format!(" (inlined {})", p(f))).unwrap_or_default();
                    let text = l.source.as_deref().map(|t| format!("  {}", p(t))).unwrap_or_default();
                    writeln!(out, "                          {}{inl}{text}", p(s))?;
                    last_src = Some(s);
                }
            }
            writeln!(
                out,
                "{:>7.2} {:>7.2}  {:>7x}  {}",
                pct(l.self_, a.self_),
                pct(l.total, a.self_),
                l.addr,
                p(&l.text)
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

fn write_html(out: &mut dyn Write, prof: &Profile, funcs: &[Annotated]) -> io::Result<()> {
    writeln!(out, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>rperf annotate</title><style>")?;
    writeln!(
        out,
        "body{{font-family:sans-serif}}table{{border-collapse:collapse;font-family:monospace}}td{{padding:0 .6em}}\
         td.n{{text-align:right}}tr.src td{{color:#555;font-style:italic}}tr.hot{{background:#fdd}}"
    )?;
    writeln!(
        out,
        "</style></head><body><h1>rperf annotate: {}</h1>",
        escape(&prof.info.input.display().to_string())
    )?;
    for a in funcs {
        writeln!(
            out,
            "<h2>{} <small>in {} ({:.2}% of the samples)</small></h2>",
            escape(&a.name),
            escape(&a.binary),
            pct(a.self_, a.total_section)
        )?;
        if let Some(n) = &a.note {
            writeln!(out, "<p>{}</p>", escape(n))?;
        }
        writeln!(out, "<h3>By source line</h3><table>")?;
        for (line, w, inlined) in &a.by_line {
            let mark = if *inlined { " (inlined)" } else { "" };
            writeln!(
                out,
                "<tr><td class=n>{:.2}%</td><td>{}{mark}</td></tr>",
                pct(*w, a.self_),
                escape(line)
            )?;
        }
        writeln!(out, "</table><h3>Instructions</h3><table><tr><th>Self</th><th>Total</th><th>Address</th><th>Instruction</th></tr>")?;
        let mut last_src: Option<&str> = None;
        for l in &a.lines {
            if let Some(s) = &l.srcline {
                if last_src != Some(s.as_str()) {
                    let inl =
                        l.inlined.as_deref().map(|f| format!(" (inlined {})", escape(f))).unwrap_or_default();
                    let text = l.source.as_deref().map(escape).unwrap_or_default();
                    writeln!(
                        out,
                        "<tr class=src><td></td><td></td><td colspan=2>{}{inl} {text}</td></tr>",
                        escape(s)
                    )?;
                    last_src = Some(s);
                }
            }
            let hot = if pct(l.self_, a.self_) >= 5.0 { " class=hot" } else { "" };
            writeln!(
                out,
                "<tr{hot}><td class=n>{:.2}</td><td class=n>{:.2}</td><td>{:x}</td><td>{}</td></tr>",
                pct(l.self_, a.self_),
                pct(l.total, a.self_),
                l.addr,
                escape(&l.text)
            )?;
        }
        writeln!(out, "</table>")?;
    }
    writeln!(out, "</body></html>")
}

#[cfg(test)]
mod tests {
    /// An ELF header's machine field, for the disassembler choice.
    fn elf_of(machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h
    }

    #[test]
    fn both_architectures_disassemble() {
        // x86_64: push %rbp; mov %rsp,%rbp; ret
        let x = super::disassemble(&elf_of(62), &[0x55, 0x48, 0x89, 0xe5, 0xc3], 0x1000);
        let text: Vec<&str> = x.iter().map(|i| i.2.as_str()).collect();
        assert_eq!(text, ["push %rbp", "mov %rsp,%rbp", "ret"]);
        assert_eq!((x[1].0, x[1].1), (0x1001, 3));
        // arm64: add x0, x0, #1; ret
        let a = super::disassemble(&elf_of(183), &[0x00, 0x04, 0x00, 0x91, 0xc0, 0x03, 0x5f, 0xd6], 0x2000);
        assert_eq!(a.len(), 2);
        assert!(a[0].2.starts_with("add x0, x0"), "{}", a[0].2);
        assert_eq!(a[1].2, "ret");
        assert_eq!(a[1].0, 0x2004);
    }
}
