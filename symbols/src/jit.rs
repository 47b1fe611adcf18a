//! Symbol files of JIT-compiled code, as runtimes register them through the GDB JIT
//! interface. ART registers small ELF files whose symbols already hold the addresses the code
//! runs at. LLVM (MCJIT, ORC) registers the relocatable object it compiled (`ET_REL`), with
//! each section's address set to where it was loaded, and leaves the rest to the debugger: its
//! symbols count from their sections, and its DWARF and `.eh_frame` still need their
//! relocations. `link` does that part of a debugger's work, so that the image reads like any
//! linked binary.

use std::borrow::Cow;

use object::elf;
use object::read::elf::{FileHeader, Rela, SectionHeader, Sym};
use object::LittleEndian as LE;

/// The image with the addresses the code runs at: an `ET_REL` object gets its symbols made
/// absolute (section address + value) and the relocations of every section applied; any other
/// image comes back as it is. A malformed object comes back as it is too (readers refuse it
/// later), never half-patched.
pub fn link(image: &[u8]) -> Cow<'_, [u8]> {
    match linked(image) {
        Some(out) => Cow::Owned(out),
        None => Cow::Borrowed(image),
    }
}

fn linked(data: &[u8]) -> Option<Vec<u8>> {
    let header = elf::FileHeader64::<LE>::parse(data).ok()?;
    if header.e_type(LE) != elf::ET_REL || !header.is_little_endian() {
        return None;
    }
    let machine = header.e_machine(LE);
    let sections = header.sections(LE, data).ok()?;
    let symbols = sections.symbols(LE, data, elf::SHT_SYMTAB).ok()?;
    // Each symbol's address: its section's address plus its value.
    let address = |index: usize| -> Option<u64> {
        if index == 0 {
            return Some(0);
        }
        let sym = symbols.symbol(object::SymbolIndex(index)).ok()?;
        let shndx = sym.st_shndx(LE);
        let value = sym.st_value(LE);
        match shndx {
            elf::SHN_UNDEF => Some(0),
            elf::SHN_ABS => Some(value),
            n if n < elf::SHN_LORESERVE => {
                let s = sections.section(object::SectionIndex(n.into())).ok()?;
                s.sh_addr(LE).checked_add(value)
            }
            _ => Some(value),
        }
    };
    let mut out = data.to_vec();
    for rela_section in sections.iter() {
        if rela_section.sh_type(LE) != elf::SHT_RELA {
            continue;
        }
        let target = sections.section(object::SectionIndex(rela_section.sh_info(LE) as usize)).ok()?;
        if target.sh_type(LE) == elf::SHT_NOBITS {
            continue;
        }
        let (base, size) = (target.sh_offset(LE), target.sh_size(LE));
        let relas: &[elf::Rela64<LE>] = rela_section.data_as_array(LE, data).ok()?;
        for r in relas {
            let (offset, addend) = (r.r_offset(LE), r.r_addend(LE));
            let s = address(r.r_sym(LE, false) as usize)?;
            let p = target.sh_addr(LE).wrapping_add(offset);
            let value = s.wrapping_add(addend as u64);
            let (bytes, v): (usize, u64) = match (machine, r.r_type(LE, false)) {
                (elf::EM_X86_64, elf::R_X86_64_64) | (elf::EM_AARCH64, elf::R_AARCH64_ABS64) => (8, value),
                (elf::EM_X86_64, elf::R_X86_64_PC64) | (elf::EM_AARCH64, elf::R_AARCH64_PREL64) => {
                    (8, value.wrapping_sub(p))
                }
                (elf::EM_X86_64, elf::R_X86_64_32 | elf::R_X86_64_32S)
                | (elf::EM_AARCH64, elf::R_AARCH64_ABS32) => (4, value),
                (elf::EM_X86_64, elf::R_X86_64_PC32) | (elf::EM_AARCH64, elf::R_AARCH64_PREL32) => {
                    (4, value.wrapping_sub(p))
                }
                // Code relocations: the code ran from the process's memory, not from here.
                _ => continue,
            };
            if offset.checked_add(bytes as u64)? > size {
                return None;
            }
            let at = usize::try_from(base.checked_add(offset)?).ok()?;
            out.get_mut(at..at + bytes)?.copy_from_slice(&v.to_le_bytes()[..bytes]);
        }
    }
    // Symbols last: relocations above read their section-relative values.
    let symtab = sections.iter().find(|s| s.sh_type(LE) == elf::SHT_SYMTAB)?;
    let entry = std::mem::size_of::<elf::Sym64<LE>>();
    // Index 0 is the null symbol.
    for i in 1..symbols.len() {
        let sym = symbols.symbol(object::SymbolIndex(i)).ok()?;
        let shndx = sym.st_shndx(LE);
        if shndx == elf::SHN_UNDEF || shndx >= elf::SHN_LORESERVE {
            continue;
        }
        let addr = address(i)?;
        // st_value is 8 bytes at offset 8 of an Elf64_Sym.
        let at = usize::try_from(symtab.sh_offset(LE)).ok()?.checked_add(i * entry + 8)?;
        out.get_mut(at..at + 8)?.copy_from_slice(&addr.to_le_bytes());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use object::{Object, ObjectSymbol};

    /// An x86_64 object file with one function and DWARF, compiled here.
    fn compiled_object() -> Option<Vec<u8>> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rperf-jit-link-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let src = dir.join("f.c");
        std::fs::write(&src, "int twice(int x) { return 2 * x; }\nint thrice(int x) { return 3 * x; }\n")
            .ok()?;
        let obj = dir.join("f.o");
        let ok = std::process::Command::new("cc")
            .args(["-g", "-O1", "-c", "-o"])
            .arg(&obj)
            .arg(&src)
            .status()
            .ok()?
            .success();
        let data = ok.then(|| std::fs::read(&obj).ok()).flatten();
        std::fs::remove_dir_all(&dir).ok();
        data
    }

    /// Sets the address of section `name`, as LLVM does before registering an object.
    fn place(data: &mut [u8], name: &str, addr: u64) {
        use object::read::elf::FileHeader;
        use object::LittleEndian as LE;
        let header = object::elf::FileHeader64::<LE>::parse(&*data).unwrap();
        let sections = header.sections(LE, &*data).unwrap();
        let (i, _) = sections
            .iter()
            .enumerate()
            .find(|(_, s)| sections.section_name(LE, s).ok() == Some(name.as_bytes()))
            .unwrap();
        let at = header.e_shoff(LE) as usize + i * 64 + 16; // sh_addr
        data[at..at + 8].copy_from_slice(&addr.to_le_bytes());
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn relocatable_objects_read_at_their_load_address() {
        let mut data = compiled_object().expect("cc compiles a test object");
        place(&mut data, ".text", 0x7f00_0000_1000);
        let linked = super::link(&data);
        let obj = object::File::parse(&*linked).unwrap();
        let twice = obj.symbols().find(|s| s.name() == Ok("twice")).unwrap();
        let thrice = obj.symbols().find(|s| s.name() == Ok("thrice")).unwrap();
        assert_eq!(twice.address(), 0x7f00_0000_1000);
        assert!(thrice.address() > twice.address());
        // DWARF names the function and its line at the new address.
        let map = rperf_perfdata::mapped::map_bytes(&linked).unwrap();
        let debug =
            crate::DebugInfo::from_map(std::path::Path::new("f.o"), map).expect("the object has DWARF");
        let frames = debug.frames(thrice.address());
        assert_eq!(frames.last().and_then(|f| f.raw_name.as_deref()), Some("thrice"));
        assert_eq!(frames.last().and_then(|f| f.line), Some(2));
        // Anything but a relocatable object is left alone.
        let exe = std::fs::read("/proc/self/exe").unwrap();
        assert!(matches!(super::link(&exe), std::borrow::Cow::Borrowed(_)));
        assert!(matches!(super::link(b"junk"), std::borrow::Cow::Borrowed(_)));
    }

    /// A relocation whose offset runs past its section (a damaged image, or one read while the
    /// runtime rewrote it) leaves the image as it is: no write outside the section, no panic.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn relocations_outside_their_section_leave_the_image_alone() {
        use object::read::elf::{FileHeader, SectionHeader};
        use object::LittleEndian as LE;
        let mut data = compiled_object().expect("cc compiles a test object");
        place(&mut data, ".text", 0x7f00_0000_1000);
        let header = object::elf::FileHeader64::<LE>::parse(&*data).unwrap();
        let sections = header.sections(LE, &*data).unwrap();
        let rela = sections.iter().find(|s| s.sh_type(LE) == object::elf::SHT_RELA).unwrap();
        let first = rela.sh_offset(LE) as usize;
        for offset in [u64::MAX - 3, u64::MAX, 1 << 40] {
            let mut bad = data.clone();
            bad[first..first + 8].copy_from_slice(&offset.to_le_bytes()); // r_offset of the first entry
            assert!(matches!(super::link(&bad), std::borrow::Cow::Borrowed(_)), "{offset:#x}");
        }
    }
}
