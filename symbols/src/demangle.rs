//! C++ and Rust name demangling.

/// Demangles C++ (Itanium) and Rust (legacy and v0) names; other names come back unchanged.
/// Android's dynamic linker prefixes its own symbols with `__dl_`; they read as
/// `[linker]NAME`, as simpleperf shows them.
pub fn demangle(name: &str) -> String {
    if let Some(inner) = name.strip_prefix("__dl_").filter(|n| !n.is_empty()) {
        return format!("[linker]{}", demangle_plain(inner));
    }
    demangle_plain(name)
}

fn demangle_plain(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            let opts = cpp_demangle::DemangleOptions::new().no_params();
            if let Ok(s) = sym.demangle(&opts) {
                return s;
            }
        }
    }
    name.to_string()
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
    }
}
