//! Rust source read as text for the code-shape checks (tests/architecture.rs): literals and
//! comments blanked, test modules left out, `use` trees expanded, module import graphs and
//! their loops, function lengths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `src` with comments and the contents of string and character literals replaced by spaces;
/// line breaks are kept, so line numbers still hold.
pub fn blank_literals(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !ident_before && raw_string_start(rest).is_some() {
            let (skip, hashes) = raw_string_start(rest).unwrap();
            let mut end = vec![b'"'];
            end.extend(std::iter::repeat_n(b'#', hashes));
            let body = i + skip;
            let close = b[body..].windows(end.len()).position(|w| w == end).map_or(b.len(), |n| body + n);
            blank(&mut out, body, close);
            i = close + end.len();
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal, not a lifetime: 'x', '\n', '\u{..}', '\''.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|n| n + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..rest.len().min(6)])
                    .or_else(|e| std::str::from_utf8(&rest[1..1 + e.valid_up_to()]))
                    .ok()
                    .and_then(|s| s.chars().next());
                ch.filter(|c| rest.get(1 + c.len_utf8()) == Some(&b'\'')).map(|c| c.len_utf8() + 2)
            };
            match len {
                Some(n) => {
                    blank(&mut out, i + 1, i + n - 1);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// `r"`, `r#"`, `br"`, ...: the length of the opening and the number of `#`.
pub fn raw_string_start(s: &[u8]) -> Option<(usize, usize)> {
    let b = usize::from(s.first() == Some(&b'b'));
    let rest = s[b..].strip_prefix(b"r")?;
    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some((b + 1 + hashes + 1, hashes))
}

/// The end (exclusive) of the brace block opening at `open`.
pub fn block_end(s: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (k, &c) in s.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}

/// A source file read for these checks.
pub struct Source {
    /// As written.
    pub text: String,
    /// Literals and comments blanked; `#[cfg(test)]` modules blanked.
    pub code: String,
    /// Names of `#[cfg(test)] mod NAME;` declared here (their files are test code).
    pub test_mods: Vec<String>,
}

pub fn read_source(path: &Path) -> Source {
    let text = std::fs::read_to_string(path).unwrap();
    let mut code = blank_literals(&text).into_bytes();
    let mut test_mods = Vec::new();
    let mut from = 0;
    while let Some(n) = find(&code[from..], b"#[cfg(test)]") {
        let at = from + n;
        let after = at + "#[cfg(test)]".len();
        let rest = std::str::from_utf8(&code[after..]).unwrap().trim_start();
        let start = code.len() - rest.len();
        from = after;
        let Some(m) = rest.strip_prefix("mod ").or_else(|| rest.strip_prefix("pub mod ")) else { continue };
        let name: String = m.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let semi = rest.find(';');
        let brace = rest.find('{');
        if semi.is_some_and(|s| brace.is_none_or(|b| s < b)) {
            test_mods.push(name);
            continue;
        }
        let open = start + brace.unwrap();
        let end = block_end(&code, open);
        for c in &mut code[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    Source { text, code: String::from_utf8(code).unwrap(), test_mods }
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The files of one crate by module path (`[]` is the crate root), test modules left out.
pub fn crate_modules(dir: &Path) -> BTreeMap<Vec<String>, Source> {
    let mut all: BTreeMap<Vec<String>, Source> = BTreeMap::new();
    for path in rust_files(dir) {
        let rel = path.strip_prefix(dir).unwrap();
        let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        let last = segs.pop().unwrap();
        match last.as_str() {
            "mod.rs" => {}
            "lib.rs" | "main.rs" if segs.is_empty() => {}
            _ => segs.push(last.trim_end_matches(".rs").to_string()),
        }
        all.insert(segs, read_source(&path));
    }
    // Drop the files of `#[cfg(test)] mod x;` declarations, and their children.
    let tests: Vec<Vec<String>> = all
        .iter()
        .flat_map(|(m, s)| {
            s.test_mods.iter().map(move |t| {
                let mut c = m.clone();
                c.push(t.clone());
                c
            })
        })
        .collect();
    all.retain(|m, _| !tests.iter().any(|t| m.starts_with(t)));
    all
}

/// Expands a `use` tree (`a::{b, c::{d as e}}`) into full paths with the name each binds.
pub fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..k], &base, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    if full.last().is_some_and(|l| l == "self") {
        full.pop();
    }
    let name = alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default());
    out.push((full, name));
}

/// Every `use` in `code`, expanded.
pub fn uses(code: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for at in keyword("use ", code) {
        let from = at + 4;
        let Some(end) = code[from..].find(';') else { break };
        let tree = &code[from..from + end];
        if tree.contains('(') || tree.contains('=') {
            continue;
        }
        expand_use(tree, &[], &mut out);
    }
    out
}

/// Where `word` (a keyword and the space after it) starts in `code`, not inside a longer name.
fn keyword<'a>(word: &'a str, code: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| at == 0 || !is_ident(code.as_bytes()[at - 1] as char))
}

/// The paths written as `a::b::c` in `code` (each as its segments).
pub fn written_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            segs.push(chars[s..j].iter().collect::<String>());
            if j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' && is_ident(chars[j + 2]) {
                j += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// Resolves `path` written in module `at` to the module it reaches (the longest module prefix).
pub fn resolve(
    path: &[String],
    at: &[String],
    modules: &BTreeMap<Vec<String>, Source>,
    aliases: &BTreeMap<String, Vec<String>>,
    reexports: &Reexports,
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => at.to_vec(),
        "super" => at[..at.len().checked_sub(1)?].to_vec(),
        name => {
            let mut child = at.to_vec();
            child.push(name.to_string());
            if modules.contains_key(&child) {
                child
            } else {
                aliases.get(name)?.clone()
            }
        }
    };
    let mut rest = rest;
    while let Some(("super", r)) = rest.split_first().map(|(a, r)| (a.as_str(), r)) {
        base.pop();
        rest = r;
    }
    let mut best = base.clone();
    for seg in rest {
        base.push(seg.clone());
        if modules.contains_key(&base) {
            best = base.clone();
        } else {
            // `crate::Name` where the crate root says `pub use module::Name`: the module.
            base.pop();
            if let Some(target) = reexports.get(&(base.clone(), seg.clone())) {
                best = target.clone();
            }
            break;
        }
    }
    Some(best)
}

/// (module, name) → the module a `pub use` there takes the name from.
pub type Reexports = BTreeMap<(Vec<String>, String), Vec<String>>;

pub fn reexports(modules: &BTreeMap<Vec<String>, Source>) -> Reexports {
    let mut out = BTreeMap::new();
    for (m, src) in modules {
        let code = src.code.replace("pub(crate) use ", "pub use ");
        for (path, name) in
            uses(&code.split("pub use ").skip(1).map(|s| format!("use {s}")).collect::<String>())
        {
            if let Some(target) = resolve(&path, m, modules, &BTreeMap::new(), &BTreeMap::new()) {
                if &target != m {
                    out.insert((m.clone(), name), target);
                }
            }
        }
    }
    out
}

/// The import graph of one crate: module → modules it imports.
pub fn import_graph(modules: &BTreeMap<Vec<String>, Source>) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut graph = BTreeMap::new();
    let reexports = reexports(modules);
    for (m, src) in modules {
        let mut aliases = BTreeMap::new();
        let used = uses(&src.code);
        for (path, name) in &used {
            if let Some(target) = resolve(path, m, modules, &BTreeMap::new(), &reexports) {
                if target.len() + 1 >= path.len() && modules.contains_key(&target) {
                    let whole = path.len() == target.len() + usize::from(path[0] == "crate")
                        || path.last().is_some_and(|l| target.last() == Some(l));
                    if whole {
                        aliases.insert(name.clone(), target);
                    }
                }
            }
        }
        let mut edges = BTreeSet::new();
        let paths = used.iter().map(|(p, _)| p.clone()).chain(written_paths(&src.code));
        for path in paths {
            if let Some(target) = resolve(&path, m, modules, &aliases, &reexports) {
                if &target != m {
                    edges.insert(target);
                }
            }
        }
        graph.insert(m.clone(), edges);
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan's algorithm).
pub fn loops(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let Some((w, _)) = s.graph.get_key_value(w) else { continue };
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

pub fn module_name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// (name, first line, lines) of every function with a body in `code`.
pub fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for at in keyword("fn ", code) {
        let from = at + 3;
        let name: String = code[from..].chars().take_while(|&c| is_ident(c)).collect();
        if name.is_empty() {
            continue;
        }
        let (Some(open), semi) = (code[from..].find('{'), code[from..].find(';')) else { continue };
        if semi.is_some_and(|s| s < open) {
            continue;
        }
        let end = block_end(b, from + open);
        let first = code[..at].matches('\n').count() + 1;
        let last = code[..end].matches('\n').count() + 1;
        out.push((name, first, last - first + 1));
    }
    out
}
