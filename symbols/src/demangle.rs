//! C++ and Rust name demangling.

/// Demangles C++ (Itanium) and Rust (legacy and v0) names; other names come back unchanged.
/// Android's dynamic linker prefixes its own symbols with `__dl_`; they read as
/// `[linker]NAME`, as simpleperf shows them.
/// C++ functions are named without their parameters (`foo::bar`), as perf names them.
pub fn demangle(name: &str) -> String {
    demangle_with(name, false)
}

/// Like `demangle`, with C++ functions' parameters (`foo::bar(int, char const*)`), as
/// simpleperf names them.
pub fn demangle_full(name: &str) -> String {
    demangle_with(name, true)
}

fn demangle_with(name: &str, params: bool) -> String {
    let name = unversioned(name);
    if let Some(inner) = name.strip_prefix("__dl_").filter(|n| !n.is_empty()) {
        return format!("[linker]{}", demangle_plain(inner, params));
    }
    demangle_plain(name, params)
}

/// A symbol without its version (`exp@@GLIBC_2.29` is `exp`, as .dynsym and simpleperf name
/// it).
fn unversioned(name: &str) -> &str {
    let Some(at) = name.find('@').filter(|&i| i > 0) else { return name };
    let version = name[at..].trim_start_matches('@');
    let plain =
        !version.is_empty() && version.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    if plain {
        &name[..at]
    } else {
        name
    }
}

fn demangle_plain(name: &str, params: bool) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = cpp_demangle::DemangleOptions::new();
            let opts = if params { opts } else { opts.no_params() };
            if let Ok(s) = sym.demangle(&opts) {
                return llvm_style(&s);
            }
        }
        // What the full demangler can't parse (some template expressions) still reads as its
        // qualified name, as pprof shows it.
        if let Some(q) = qualified_name(name) {
            return q;
        }
    }
    name.to_string()
}

/// A demangled name as LLVM's demangler writes it (simpleperf and Android's tools use that
/// one), where the GNU-style output differs: clone suffixes (`(.llvm.123)`, not
/// `[clone .llvm.123]`), integer template arguments (`8ul`, not `(unsigned long)8`),
/// lambdas (`'lambda'(int)`, `'lambda0'(int)`; not `{lambda(int)#1}`, `{lambda(int)#2}`) and
/// unnamed types (`'unnamed'`, not `{unnamed type#1}`).
fn llvm_style(gnu: &str) -> String {
    const LITERALS: [(&str, &str); 7] = [
        ("(unsigned long long)", "ull"),
        ("(long long)", "ll"),
        ("(unsigned long)", "ul"),
        ("(long)", "l"),
        ("(unsigned int)", "u"),
        ("(unsigned char)", ""),
        ("(int)", ""),
    ];
    let mut out = String::with_capacity(gnu.len());
    let mut rest = gnu;
    'scan: while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix(" [clone ") {
            if let Some(end) = after.find(']') {
                out.push_str(" (");
                out.push_str(&after[..end]);
                out.push(')');
                rest = &after[end + 1..];
                continue;
            }
        }
        for (ty, suffix) in LITERALS {
            if let Some(after) = rest.strip_prefix(ty) {
                let digits = after.strip_prefix('-').unwrap_or(after);
                let n = digits.bytes().take_while(u8::is_ascii_digit).count();
                if n > 0 {
                    let len = after.len() - digits.len() + n;
                    out.push_str(&after[..len]);
                    out.push_str(suffix);
                    rest = &after[len..];
                    continue 'scan;
                }
            }
        }
        if let Some(after) = rest.strip_prefix("{virtual override thunk(") {
            if let Some((kind, target, tail)) = thunk(after) {
                out.push_str(kind);
                out.push_str(&llvm_style(target));
                rest = tail;
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("{lambda(") {
            if let Some((args, n, tail)) = closing(after) {
                out.push_str(&format!("'lambda{}'({})", discriminator(n), llvm_style(args)));
                rest = tail;
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("{unnamed type#") {
            let n = after.bytes().take_while(u8::is_ascii_digit).count();
            if let (Ok(k), Some(tail)) = (after[..n].parse::<u32>(), after[n..].strip_prefix('}')) {
                out.push_str(&format!("'unnamed{}'", discriminator(k)));
                rest = tail;
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `{offset(-8)}, f())}rest` (what follows `{virtual override thunk(`): LLVM's words for the
/// thunk, its target and the rest.
fn thunk(s: &str) -> Option<(&'static str, &str, &str)> {
    let kind = if s.starts_with("{offset(") {
        "non-virtual thunk to "
    } else if s.starts_with("{virtual offset(") {
        "virtual thunk to "
    } else {
        return None;
    };
    let target = &s[s.find("}, ")? + 3..];
    let mut depth = 0usize;
    for (i, c) in target.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ')' => return Some((kind, &target[..i], target[i + 1..].strip_prefix('}')?)),
            _ => {}
        }
    }
    None
}

/// LLVM numbers the second of a kind 0, the third 1, ...; the first has no number.
fn discriminator(n: u32) -> String {
    if n >= 2 {
        (n - 2).to_string()
    } else {
        String::new()
    }
}

/// `args)#N}rest` (what follows `{lambda(`): the arguments, N and the rest.
fn closing(s: &str) -> Option<(&str, u32, &str)> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ')' => {
                let after = s[i + 1..].strip_prefix('#')?;
                let n = after.bytes().take_while(u8::is_ascii_digit).count();
                let k = after[..n].parse().ok()?;
                return Some((&s[..i], k, after[n..].strip_prefix('}')?));
            }
            _ => {}
        }
    }
    None
}

/// The qualified name of an Itanium-mangled function without template arguments or
/// parameters (`std::chrono::duration_cast`), or `None` where the name holds what this
/// reading doesn't follow (operators, lambdas, back references in the name itself).
fn qualified_name(mangled: &str) -> Option<String> {
    let mut m = Mangled { s: mangled.strip_prefix("_Z")?.as_bytes(), at: 0 };
    m.eat(b'L');
    let mut parts: Vec<String> = Vec::new();
    if m.eat(b'N') {
        while m.peek().is_some_and(|c| b"rVKRO".contains(&c)) {
            m.at += 1;
        }
        loop {
            match m.peek()? {
                b'E' => break,
                b'0'..=b'9' => parts.push(m.source_name()?),
                b'S' if m.s.get(m.at + 1) == Some(&b't') && parts.is_empty() => {
                    m.at += 2;
                    parts.push("std".into());
                }
                b'I' => m.skip_args()?,
                b'L' => m.at += 1,
                b'B' => {
                    m.at += 1;
                    m.source_name()?;
                }
                b'C' if m.s.get(m.at + 1).is_some_and(|c| b"123".contains(c)) => {
                    m.at += 2;
                    parts.push(parts.last()?.clone());
                }
                b'D' if m.s.get(m.at + 1).is_some_and(|c| b"012".contains(c)) => {
                    m.at += 2;
                    parts.push(format!("~{}", parts.last()?));
                }
                _ => return None,
            }
        }
    } else {
        if m.s[m.at..].starts_with(b"St") {
            m.at += 2;
            parts.push("std".into());
        }
        parts.push(m.source_name()?);
    }
    Some(parts.join("::"))
}

/// A cursor over a mangled name.
struct Mangled<'a> {
    s: &'a [u8],
    at: usize,
}

impl Mangled<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.at += hit as usize;
        hit
    }

    fn number(&mut self) -> Option<usize> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at]).ok()?.parse().ok()
    }

    /// `<length><identifier>`.
    fn source_name(&mut self) -> Option<String> {
        let len = self.number()?;
        let name = self.s.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        String::from_utf8(name.to_vec()).ok()
    }

    /// Skips `I <template-arg>* E`, counting what opens and closes inside.
    fn skip_args(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            let c = self.peek()?;
            match c {
                b'0'..=b'9' => {
                    self.source_name()?;
                    continue;
                }
                b'I' | b'N' | b'X' | b'J' | b'F' => depth += 1,
                b'E' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                // A literal: `L <type> <value> E`, or `L _Z <encoding> E`.
                b'L' => {
                    self.at += 1;
                    match self.peek()? {
                        b'Z' | b'_' => depth += 1,
                        b'0'..=b'9' => {
                            self.source_name()?;
                            self.skip_value()?;
                        }
                        b'D' => {
                            self.at += 2;
                            self.skip_value()?;
                        }
                        b'a'..=b'z' => {
                            self.at += 1;
                            self.skip_value()?;
                        }
                        _ => return None,
                    }
                    continue;
                }
                // Back references and template parameters: `S_`, `S3_`, `T_`, `T0_`; `St`, `Sa`…
                b'S' | b'T' => {
                    if c == b'S' && self.s.get(self.at + 1).is_some_and(|c| c.is_ascii_lowercase()) {
                        self.at += 2;
                        continue;
                    }
                    while self.peek()? != b'_' {
                        self.at += 1;
                    }
                }
                // An array's length: `A10_`.
                b'A' => {
                    self.at += 1;
                    self.number();
                    if self.peek()? != b'_' {
                        return None;
                    }
                }
                b'D' => {
                    self.at += 1;
                    if matches!(self.peek()?, b'T' | b't') {
                        depth += 1;
                    }
                }
                b'u' | b'U' => {
                    self.at += 1;
                    self.source_name()?;
                    continue;
                }
                _ => {}
            }
            self.at += 1;
        }
    }

    /// A literal's value up to its `E`, which is consumed.
    fn skip_value(&mut self) -> Option<()> {
        while self.peek()? != b'E' {
            self.at += 1;
        }
        self.at += 1;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn demangles() {
        assert_eq!(super::demangle("_ZN3foo3barEv"), "foo::bar");
        assert_eq!(
            super::demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(super::demangle("main"), "main");
        assert_eq!(
            super::demangle("__dl__ZN12LinkerLogger10ResetStateEv"),
            "[linker]LinkerLogger::ResetState"
        );
        assert_eq!(super::demangle("__dl___linker_init"), "[linker]__linker_init");
        assert_eq!(super::demangle("exp@@GLIBC_2.29"), "exp");
        assert_eq!(
            super::demangle_full("_ZNSt6chrono3_V212system_clock3nowEv@@GLIBCXX_3.4.19"),
            "std::chrono::_V2::system_clock::now()"
        );
        assert_eq!(super::demangle("a@b c"), "a@b c");
        assert_eq!(super::demangle_full("_Z5func2ii"), "func2(int, int)");
        assert_eq!(super::demangle("_Z5func2ii"), "func2");
        assert_eq!(super::demangle_full("main"), "main");
    }

    #[test]
    fn names_as_llvm_writes_them() {
        use super::llvm_style;
        assert_eq!(llvm_style("f(int, bool) [clone .llvm.378]"), "f(int, bool) (.llvm.378)");
        assert_eq!(llvm_style("A<(unsigned long)8>::f(B<(int)-3>)"), "A<8ul>::f(B<-3>)");
        assert_eq!(
            llvm_style("F<g()::{lambda(std::function<bool (int)>&)#1}, h()::{lambda(int)#3}>"),
            "F<g()::'lambda'(std::function<bool (int)>&), h()::'lambda1'(int)>"
        );
        assert_eq!(llvm_style("a::{unnamed type#2}::f"), "a::'unnamed0'::f");
        assert_eq!(super::demangle_full("_ZThn8_N3foo3barEv"), "non-virtual thunk to foo::bar()");
        assert_eq!(super::demangle_full("_ZTv0_n24_N3foo3barEv"), "virtual thunk to foo::bar()");
        assert_eq!(llvm_style("(long)x [clone"), "(long)x [clone");
        assert_eq!(
            super::demangle_full("_ZN3art11interpreter7ExecuteEPNS_6ThreadEb.llvm.42"),
            "art::interpreter::Execute(art::Thread*, bool) (.llvm.42)"
        );
    }

    #[test]
    fn names_what_the_full_demangler_cannot_parse() {
        // duration_cast's return type holds `srNS_13__is_durationIT_EE5valueE`.
        let cast = "_ZNSt6chrono13duration_castINS_8durationIdSt5ratioILl1ELl1000000000EEEElS3_EENSt9enable_ifIXsrNS_13__is_durationIT_EE5valueES7_E4typeERKNS1_IT0_T1_EE";
        assert_eq!(super::demangle(cast), "std::chrono::duration_cast");
        assert_eq!(super::demangle_full(cast), "std::chrono::duration_cast");
        for (mangled, name) in [
            ("_ZN3foo3barIiLi3EE3bazEv", "foo::bar::baz"),
            ("_ZNK3FooIA10_iE3getEv", "Foo::get"),
            ("_ZN3FooC2Ev", "Foo::Foo"),
            ("_ZN3FooD1Ev", "Foo::~Foo"),
            ("_ZL6helperv", "helper"),
            ("_ZSt4moveIRiEv", "std::move"),
        ] {
            assert_eq!(super::qualified_name(mangled).as_deref(), Some(name), "{mangled}");
        }
        // Operators are left to the full demangler; a broken name stays as it is.
        assert_eq!(super::qualified_name("_ZN3FooplERKS_"), None);
        assert_eq!(super::demangle("_ZN3foo"), "_ZN3foo");
        assert_eq!(super::demangle("_ZN99999999999999999999999999foo"), "_ZN99999999999999999999999999foo");
        assert_eq!(super::demangle("_ZN18446744073709551615fooE"), "_ZN18446744073709551615fooE");
    }
}
