//! The shape of the code, checked on its source: no import loop between the modules of any
//! crate, no source file over 600 lines, no function over 80 lines outside tests, and `unsafe`
//! only in `record/`, the one helper that maps input files and the two C interfaces (the report
//! library's, OpenCSD's), each block with a `// SAFETY:` comment. See docs/ARCHITECTURE.md.
//!
//! The source is read as text: comments, string and character literals are blanked first, and
//! `#[cfg(test)]` modules are left out. A module's imports are the `use` items and the paths
//! written out in its code (`crate::…`, `super::…`, `self::…`, and a child module's or an
//! imported module's name followed by `::`).

mod source_scan;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use source_scan::*;

const CRATES: [&str; 8] = [
    "src",
    "perfdata/src",
    "record/src",
    "report/src",
    "reportlib/src",
    "unwind/src",
    "symbols/src",
    "etm/src",
];
const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;
/// Where `unsafe` may appear: the kernel ABI crate, the one helper that maps input files, the
/// report library's C interface, and OpenCSD's (the ETM decoder, loaded at run time).
const UNSAFE_ALLOWED: [&str; 4] =
    ["record/src/", "perfdata/src/mapped.rs", "reportlib/src/api.rs", "etm/src/opencsd.rs"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn crate_loops(dir: &str) -> Vec<String> {
    let modules = crate_modules(&root().join(dir));
    let graph = import_graph(&modules);
    loops(&graph)
        .into_iter()
        .map(|comp| {
            let names: Vec<String> = comp.iter().map(|m| module_name(m)).collect();
            let edges: Vec<String> = comp
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| comp.contains(b))
                        .map(move |b| format!("{} → {}", module_name(a), module_name(b)))
                })
                .collect();
            format!("{dir}: {} ({})", names.join(", "), edges.join("; "))
        })
        .collect()
}

#[test]
fn no_import_loop_in_any_crate() {
    let found: Vec<String> = CRATES.iter().flat_map(|c| crate_loops(c)).collect();
    assert!(found.is_empty(), "import loops between modules:\n{}", found.join("\n"));
}

/// Every source file: the crates, the tests and the fuzz targets.
fn all_sources() -> Vec<PathBuf> {
    let mut dirs: Vec<&str> = CRATES.to_vec();
    dirs.extend(["tests", "fuzz/fuzz_targets"]);
    dirs.iter().flat_map(|d| rust_files(&root().join(d))).collect()
}

#[test]
fn no_source_file_over_600_lines() {
    let long: Vec<String> = all_sources()
        .into_iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{}: {n} lines", p.strip_prefix(root()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_FILE_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn no_function_over_80_lines_outside_tests() {
    let mut long = Vec::new();
    for dir in CRATES {
        for path in rust_files(&root().join(dir)) {
            let src = read_source(&path);
            for (name, line, n) in functions(&src.code) {
                if n > MAX_FN_LINES {
                    long.push(format!(
                        "{}:{line}: fn {name}: {n} lines",
                        path.strip_prefix(root()).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn unsafe_only_in_record_and_the_mmap_helper_each_with_a_safety_comment() {
    let mut wrong = Vec::new();
    for path in all_sources() {
        let rel = path.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
        if rel.starts_with("tests/") || rel.starts_with("fuzz/") {
            continue;
        }
        let src = read_source(&path);
        let lines: Vec<&str> = src.text.lines().collect();
        for (k, line) in src.code.lines().enumerate() {
            let Some(col) = line.find("unsafe") else { continue };
            let word_start = col == 0 || !is_ident(line.as_bytes()[col - 1] as char);
            let word_end = line[col + 6..].chars().next().is_none_or(|c| !is_ident(c));
            if !(word_start && word_end) || line.contains("unsafe_code") {
                continue;
            }
            if !UNSAFE_ALLOWED.iter().any(|a| rel.starts_with(a)) {
                wrong.push(format!("{rel}:{}: unsafe outside record/ and the mmap helper", k + 1));
                continue;
            }
            // The comment sits on the line, or in the lines just above (an attribute or a `let`
            // may come between).
            let above = &lines[k.saturating_sub(6)..=k];
            let said = above.iter().any(|l| l.contains("SAFETY:") || l.contains("# Safety"));
            if !said {
                wrong.push(format!("{rel}:{}: unsafe without a `// SAFETY:` comment", k + 1));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_read_rust_as_rust() {
    let code = blank_literals("let a = \"use crate::x;\"; // use crate::y;\nlet c = '{'; fn f<'a>() {}");
    assert!(!code.contains("crate::x") && !code.contains("crate::y") && !code.contains("'{'"));
    assert!(code.contains("fn f<'a>() {}"));
    let mut out = Vec::new();
    expand_use("crate::{a::B, c::{self, D as E}}", &[], &mut out);
    let got: Vec<String> = out.iter().map(|(p, n)| format!("{}={n}", p.join("::"))).collect();
    assert_eq!(got, ["crate::a::B=B", "crate::c=c", "crate::c::D=E"]);
    let mut graph = BTreeMap::new();
    let m = |s: &str| vec![s.to_string()];
    graph.insert(m("a"), BTreeSet::from([m("b")]));
    graph.insert(m("b"), BTreeSet::from([m("a")]));
    graph.insert(m("c"), BTreeSet::from([m("a")]));
    assert_eq!(loops(&graph), vec![vec![m("a"), m("b")]]);
    let f = functions("fn a() {\n}\nfn b();\nfn c() { if x { y } }");
    assert_eq!(f, [("a".to_string(), 1, 2), ("c".to_string(), 4, 1)]);
}
