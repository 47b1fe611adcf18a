//! A kernel image (`vmlinux`) in the symbol folders names kernel frames, and the report library
//! gives their addresses in the image, as simpleperf maps them: the running kernel put `.text`
//! at the start of its kernel mapping (KASLR); the image has it at its own address.

mod common;

use std::path::Path;
use std::process::Command;

use common::library::scripts_newest;
use common::*;

/// Where the test image puts `.text`: not where this machine's kernel runs it.
const IMAGE_TEXT: u64 = 0xffff_ffff_8000_0000;

/// Writes the running kernel's image (its symbols from /proc/kallsyms, moved to `IMAGE_TEXT`)
/// and a build_id_list into `dir`; returns the running kernel's `_text`.
fn kernel_image(dir: &Path) -> u64 {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/kernel_image.py");
    let o = run(Command::new("python3").arg(script).arg(dir).arg(format!("{IMAGE_TEXT:#x}")));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = u64::from_str_radix(stdout(&o).trim().trim_start_matches("0x"), 16).unwrap();
    assert_ne!(text, IMAGE_TEXT, "pick another image address");
    text
}

/// The kernel rows of `report --sort dso,symbol`.
fn kernel_rows(data: &Path, args: &[&str]) -> Vec<String> {
    let o = run(rperf().args(["report", "--sort", "dso,symbol", "-i"]).arg(data).args(args));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).lines().filter(|l| l.contains("[kernel.kallsyms]")).map(str::to_string).collect()
}

/// (kernel frames, those whose vaddr_in_file is in the image and inside their symbol) as the
/// newest scripts' `simpleperf_report_lib.py` reads `data` with `symfs`.
fn library_kernel_frames(data: &Path, symfs: &Path, runtime_text: u64) -> (u64, u64) {
    let program = format!(
        r#"
import sys
sys.path.insert(0, {scripts:?})
from simpleperf_report_lib import ReportLib
lib = ReportLib()
lib.SetRecordFile({data:?})
lib.SetSymfs({symfs:?})
frames = in_image = 0
while lib.GetNextSample():
    chain = lib.GetCallChainOfCurrentSample()
    entries = [(lib.GetCurrentSample().ip, lib.GetSymbolOfCurrentSample())]
    entries += [(chain.entries[i].ip, chain.entries[i].symbol) for i in range(chain.nr)]
    for ip, s in entries:
        if s.dso_name != '[kernel.kallsyms]':
            continue
        frames += 1
        at = ip - {runtime_text} + {image_text}
        in_image += s.vaddr_in_file == at and s.symbol_addr <= at < s.symbol_addr + s.symbol_len
print(frames, in_image)
"#,
        scripts = scripts_newest().display().to_string(),
        data = data.display().to_string(),
        symfs = symfs.display().to_string(),
        image_text = IMAGE_TEXT,
    );
    let o = run(Command::new("python3").arg("-c").arg(&program));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let (frames, in_image) = out.trim().split_once(' ').expect(&out);
    (frames.parse().unwrap(), in_image.parse().unwrap())
}

#[test]
fn a_kernel_image_names_kernel_frames_at_its_own_addresses() {
    let dir = scratch("kernel_image");
    let symfs = dir.join("binary_cache");
    std::fs::create_dir_all(&symfs).unwrap();
    let runtime_text = kernel_image(&symfs);
    let data = dir.join("perf.data");
    let o = run(rperf().args(["record", "-g", "fp", "-o"]).arg(&data).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=64k",
        "count=50000",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    // The image's names are the running kernel's.
    let from_kallsyms = kernel_rows(&data, &[]);
    assert!(from_kallsyms.iter().any(|r| r.contains("read_zero")), "{from_kallsyms:?}");
    let symfs_arg = symfs.display().to_string();
    assert_eq!(kernel_rows(&data, &["--symfs", &symfs_arg]), from_kallsyms);
    // The library gives each kernel frame's address in the image, inside its symbol there.
    let (frames, in_image) = library_kernel_frames(&data, &symfs, runtime_text);
    assert!(frames > 100, "{frames} kernel frames");
    assert_eq!(in_image, frames, "kernel frames at their image addresses");
    // An image of another kernel (another build id) is not used.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut image = std::fs::read(symfs.join("vmlinux")).unwrap();
    let id = std::fs::read_to_string(symfs.join("build_id_list")).unwrap();
    let id = id.split('=').next().unwrap();
    let bytes: Vec<u8> =
        (0..id.len()).step_by(2).map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap()).collect();
    let at = image.windows(bytes.len()).position(|w| w == bytes).expect("the build id in the image");
    image[at] ^= 0xff;
    std::fs::write(other.join("vmlinux"), image).unwrap();
    let (frames, in_image) = library_kernel_frames(&data, &other, runtime_text);
    assert!(frames > 100 && in_image == 0, "{in_image} of {frames} frames read from another kernel's image");
}
