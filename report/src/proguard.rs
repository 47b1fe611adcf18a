//! ProGuard and R8 mapping files (`mapping.txt`): obfuscated Java and Kotlin class and method
//! names shown as they were written. A class line maps `original -> obfuscated:`; the indented
//! lines under it map its members, methods with their parameter lists and, from R8, line
//! ranges (`1:5:void run():10:14 -> a`).

use std::collections::HashMap;
use std::path::Path;

/// The classes of one or more mapping files, by obfuscated name.
#[derive(Clone, Debug, Default)]
pub struct ProguardMapping {
    classes: HashMap<String, Class>,
}

#[derive(Clone, Debug, Default)]
struct Class {
    original: String,
    /// Obfuscated method name to original name (the first mapped, when several are).
    methods: HashMap<String, String>,
}

/// The largest mapping file read (a large app's is a few hundred megabytes).
const MAX_MAPPING: u64 = 1 << 30;

/// The file at `path` the user named, read when it is a regular file of at most `limit` bytes
/// (a link to one will do): a device or FIFO named by mistake must not fill memory or hang.
pub(crate) fn read_named(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    use rperf_symbols::trusted::{read, Owners, Refusal};
    read(path, limit, Owners::Anyone, true).map_err(|r| match r {
        Refusal::Missing => "no such file".to_string(),
        Refusal::Unsafe(why) => why,
    })
}

impl ProguardMapping {
    /// Reads a mapping file; the error names the file and the line it could not read.
    pub fn read(path: &Path) -> Result<ProguardMapping, crate::Error> {
        let mut m = ProguardMapping::default();
        m.add(path)?;
        Ok(m)
    }

    /// Adds the classes of another mapping file.
    pub fn add(&mut self, path: &Path) -> Result<(), crate::Error> {
        let bad = |why: String| crate::Error::Proguard { path: path.to_path_buf(), why };
        let text = read_named(path, MAX_MAPPING).map_err(bad)?;
        let text = String::from_utf8_lossy(&text);
        let mut class: Option<String> = None;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let Some((left, right)) = line.split_once(" -> ") else {
                return Err(bad(format!("line {}: expected `NAME -> NAME`", n + 1)));
            };
            if !line.starts_with([' ', '\t']) {
                let obfuscated = right.trim().trim_end_matches(':').to_string();
                let c = Class { original: left.trim().to_string(), methods: HashMap::new() };
                self.classes.insert(obfuscated.clone(), c);
                class = Some(obfuscated);
                continue;
            }
            // A method: `[a:b:]TYPE NAME(ARGS)[:c[:d]] -> OBF`; fields have no parameter list.
            let Some(open) = left.find('(') else { continue };
            let Some(c) = class.as_ref().and_then(|c| self.classes.get_mut(c)) else { continue };
            let name = left[..open].rsplit([' ', ':']).next().unwrap_or("").to_string();
            if !name.is_empty() {
                c.methods.entry(right.trim().to_string()).or_insert(name);
            }
        }
        Ok(())
    }

    /// Renames the functions the mapping names.
    pub fn rename(&self, funcs: &mut [crate::resolve::Func]) {
        for f in funcs {
            if let Some(name) = self.deobfuscate(&f.name) {
                f.name = name;
            }
        }
    }

    /// `name` (a Java method as reports name it: `a.b.c`, or `void a.b.c(int)`) with its class
    /// and method as the mapping says; None when the class is not in the mapping.
    pub fn deobfuscate(&self, name: &str) -> Option<String> {
        let (head, tail) = match name.find('(') {
            Some(i) => name.split_at(i),
            None => (name, ""),
        };
        let start = head.rfind(' ').map_or(0, |i| i + 1);
        let qualified = &head[start..];
        let (class, method) = qualified.rsplit_once('.')?;
        let c = self.classes.get(class)?;
        let method = c.methods.get(method).map_or(method, String::as_str);
        Some(format!("{}{}.{method}{tail}", &head[..start], c.original))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_methods_map_back() {
        let dir = std::env::temp_dir().join(format!("rperf-proguard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mapping.txt");
        std::fs::write(
            &path,
            "# compiler: R8\ncom.example.MainActivity -> a.a:\n    int count -> a\n    \
             1:4:void busyLoop(int):20:23 -> b\n    void onCreate(android.os.Bundle) -> onCreate\n",
        )
        .unwrap();
        let m = ProguardMapping::read(&path).unwrap();
        assert_eq!(m.deobfuscate("a.a.b").as_deref(), Some("com.example.MainActivity.busyLoop"));
        assert_eq!(
            m.deobfuscate("void a.a.b(int)").as_deref(),
            Some("void com.example.MainActivity.busyLoop(int)")
        );
        assert_eq!(m.deobfuscate("a.a.zz").as_deref(), Some("com.example.MainActivity.zz"));
        assert_eq!(m.deobfuscate("b.c.d"), None);
        std::fs::write(&path, "garbage line\n").unwrap();
        assert!(ProguardMapping::read(&path).unwrap_err().to_string().contains("line 1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
