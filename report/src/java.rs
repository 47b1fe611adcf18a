//! Java and Kotlin stacks as simpleperf shows them. Each frame is told apart by how its code
//! runs: native, a method ART interprets (dex files), a method ART compiled (its JIT caches),
//! or ART's own machinery around Java methods: the runtime's frames (`libart.so`) next to a
//! Java method, and `art_jni_trampoline`. ART's frames are hidden unless asked for, except the
//! native method a JNI call enters, so a stack reads as the app's methods. A method that ART
//! moved from its interpreted frame into its compiled code (on-stack replacement) shows once.

use std::collections::HashMap;

use crate::model::{DsoId, DsoKind, ExecType};
use crate::profile::{DexMethod, Names};
use crate::resolve::{AddrId, FuncId, Symbolized};

/// A Java method's name without its return type and parameters, as dex files name methods:
/// `void a.B.run(int)` is `a.B.run`.
pub fn method_name(name: &str) -> &str {
    let head = name.split('(').next().unwrap_or(name);
    head.rsplit(' ').next().unwrap_or(head)
}

/// Code that ART compiled at run time.
fn compiled_at_run_time(names: &Names, dso: DsoId) -> bool {
    names.dsos[dso as usize].exec_type() == ExecType::Jit
}

/// Java methods compiled at run time, by frame address, as the dex methods of the same name
/// the recording has (simpleperf's default in its report library and report-sample: one method
/// reads as one, however ART ran it).
pub fn dex_methods(names: &Names, symbols: &Symbolized) -> HashMap<AddrId, DexMethod> {
    let unnamed = |f| symbols.is_unnamed(f);
    let containing = |a: AddrId| *symbols.funcs(a).last().expect("every address has a function");
    let mut dex: HashMap<&str, DexMethod> = HashMap::new();
    for a in 0..symbols.len() as AddrId {
        let (dso, _) = symbols.location(a);
        let f = containing(a);
        if names.dsos[dso as usize].kind == DsoKind::Dex && !unnamed(f) {
            dex.entry(method_name(&names.func(f).name)).or_insert((dso, f, symbols.symbol_range(a).0));
        }
    }
    let mut out = HashMap::new();
    for a in 0..symbols.len() as AddrId {
        let (dso, _) = symbols.location(a);
        let f = containing(a);
        if compiled_at_run_time(names, dso) && !unnamed(f) {
            if let Some(&d) = dex.get(method_name(&names.func(f).name)) {
                out.insert(a, d);
            }
        }
    }
    out
}

/// What shaping needs to know of one frame address.
#[derive(Clone, Copy)]
struct Unit {
    /// How its code runs, before ART's frames are marked.
    exec: ExecType,
    /// Code of ART's runtime, hidden next to Java methods.
    art: bool,
    /// ART's JNI trampoline: the frame it calls is a JNI method and stays.
    jni_trampoline: bool,
    /// The function the address is in.
    func: FuncId,
}

/// Shapes the address stacks of one recording.
pub struct Shaper<'a> {
    units: Vec<Unit>,
    names: &'a Names,
    show_art: bool,
    /// Java methods compiled at run time that read as their dex methods (`dex_methods`):
    /// on-stack replacement then keeps the interpreted frame.
    merged: Option<&'a HashMap<AddrId, DexMethod>>,
}

impl<'a> Shaper<'a> {
    /// A shaper for the frame addresses of `symbols`; `show_art` keeps ART's frames.
    pub fn new(
        names: &'a Names,
        symbols: &Symbolized,
        show_art: bool,
        merged: Option<&'a HashMap<AddrId, DexMethod>>,
    ) -> Shaper<'a> {
        let units = (0..symbols.len() as AddrId)
            .map(|a| {
                let func = *symbols.funcs(a).last().expect("every address has a function");
                let dso = &names.dsos[symbols.location(a).0 as usize];
                let exec = dso.exec_type();
                let jni_trampoline =
                    exec == ExecType::Native && names.func(func).name == "art_jni_trampoline";
                let art = exec == ExecType::Native && (dso.is_art_runtime() || jni_trampoline);
                Unit { exec, art, jni_trampoline, func }
            })
            .collect();
        Shaper { units, names, show_art, merged }
    }

    /// The stack `addrs` (innermost first) as reports show it, with each frame's execution
    /// type and its index in `addrs`. Stacks without Java methods come back as they are.
    pub fn shape(&self, addrs: Vec<AddrId>) -> (Vec<AddrId>, Vec<ExecType>, Vec<u32>) {
        let unit = |a: AddrId| self.units[a as usize];
        let mut types: Vec<ExecType> = addrs.iter().map(|&a| unit(a).exec).collect();
        if !types.iter().any(|t| t.is_java()) {
            let origin = (0..addrs.len() as u32).collect();
            return (addrs, types, origin);
        }
        // ART's frames are those of its runtime in an unbroken run beside a Java method: the
        // ones it called (towards the leaf) and the ones that called it.
        let is_art = |i: usize, types: &[ExecType]| types[i] == ExecType::Native && unit(addrs[i]).art;
        let mut trampolines = Vec::new();
        let mut near_java = false;
        for i in 0..addrs.len() {
            if types[i].is_java() {
                near_java = true;
                for j in (0..i).rev() {
                    if !is_art(j, &types) {
                        break;
                    }
                    types[j] = ExecType::Art;
                    if unit(addrs[j]).jni_trampoline {
                        trampolines.push(j);
                    }
                }
            } else if near_java && is_art(i, &types) {
                types[i] = ExecType::Art;
                if unit(addrs[i]).jni_trampoline {
                    trampolines.push(i);
                }
            } else {
                near_java = false;
            }
        }
        // What a JNI trampoline calls is the app's (or the platform's) native method.
        for t in trampolines {
            if t > 0 && types[t - 1] == ExecType::Art {
                types[t - 1] = ExecType::Native;
            }
        }
        let mut frames: Vec<(AddrId, ExecType, u32)> =
            addrs.iter().copied().zip(types).zip(0..).map(|((a, t), i)| (a, t, i)).collect();
        if !self.show_art {
            frames.retain(|f| f.1 != ExecType::Art);
        }
        // On-stack replacement: the compiled method runs in place of its interpreted frame.
        // It shows once: as the compiled method, or, where compiled methods read as their dex
        // methods, as the interpreted frame.
        let name = |a: AddrId| &self.names.func(unit(a).func).name;
        let mut i = 0;
        while i + 1 < frames.len() {
            let (inner, outer) = (frames[i], frames[i + 1]);
            let same = outer.1 == ExecType::Interpreted
                && match self.merged {
                    None => inner.1 == ExecType::Jit && name(inner.0) == name(outer.0),
                    Some(m) => m.get(&inner.0).is_some_and(|d| d.1 == unit(outer.0).func),
                };
            if same {
                frames.remove(if self.merged.is_some() { i } else { i + 1 });
            } else {
                i += 1;
            }
        }
        let mut shaped = (Vec::with_capacity(frames.len()), Vec::with_capacity(frames.len()), Vec::new());
        for (a, t, i) in frames {
            shaped.0.push(a);
            shaped.1.push(t);
            shaped.2.push(i);
        }
        shaped
    }
}
