//! OpenCSD's C interface (`libopencsd_c_api.so.1`, the decoder Linux perf and simpleperf use),
//! loaded at run time: a decode tree fed with trace bytes, which hands each decoded element to
//! one callback and asks another for the instruction bytes at an address.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `ocsd_etmv4_cfg`.
#[repr(C)]
#[derive(Clone)]
pub struct Etmv4Config {
    pub idr: [u32; 9],
    pub configr: u32,
    pub traceidr: u32,
    pub arch_ver: u32,
    pub core_prof: u32,
}

/// `ocsd_ete_cfg`.
#[repr(C)]
#[derive(Clone)]
pub struct EteConfig {
    pub idr0: u32,
    pub idr1: u32,
    pub idr2: u32,
    pub idr8: u32,
    pub devarch: u32,
    pub configr: u32,
    pub traceidr: u32,
    pub arch_ver: u32,
    pub core_prof: u32,
}

/// `ARCH_V8` and `profile_CortexA`, as simpleperf configures its decoders.
pub const ARCH_V8: u32 = 0x0800;
pub const ARCH_AA64: u32 = 0x0864;
pub const PROFILE_CORTEX_A: u32 = 3;

type ElementFn = extern "C" fn(*const c_void, u64, u8, *const c_void) -> u32;
type MemoryFn = extern "C" fn(*const c_void, u64, u32, u8, u32, *mut u8) -> u32;
// SAFETY: the C functions' types below; calling one is unsafe, and each call says why it holds.
type CreateTree = unsafe extern "C" fn(u32, u32) -> *mut c_void;
// SAFETY: as above.
type DestroyTree = unsafe extern "C" fn(*mut c_void);
// SAFETY: as above.
type Process = unsafe extern "C" fn(*mut c_void, u32, u64, u32, *const u8, *mut u32) -> u32;
// SAFETY: as above.
type SetElementFn = unsafe extern "C" fn(*mut c_void, ElementFn, *const c_void) -> u32;
// SAFETY: as above.
type CreateDecoder = unsafe extern "C" fn(*mut c_void, *const c_char, c_int, *const c_void, *mut u8) -> u32;
// SAFETY: as above.
type AddMemoryFn = unsafe extern "C" fn(*mut c_void, u64, u64, u32, MemoryFn, *const c_void) -> u32;

/// The functions used, from the library.
struct Api {
    create_tree: CreateTree,
    destroy_tree: DestroyTree,
    process: Process,
    set_element_fn: SetElementFn,
    create_decoder: CreateDecoder,
    add_memory_fn: AddMemoryFn,
}

/// The library, loaded once; Err says why it could not be.
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, String> {
    let names = [c"libopencsd_c_api.so.1", c"libopencsd_c_api.so"];
    // SAFETY: dlopen with a NUL-terminated name; the handle is kept for the process's life.
    let handle =
        names.iter().map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW) }).find(|h| !h.is_null());
    let Some(handle) = handle else {
        return Err("decoding ETM trace needs OpenCSD's library (libopencsd_c_api.so.1): install it \
                    (Debian and Ubuntu: apt install libopencsd1)"
            .into());
    };
    let symbol = |name: &CStr| {
        // SAFETY: dlsym on a handle dlopen gave, with a NUL-terminated name.
        let f = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if f.is_null() {
            Err(format!("OpenCSD's library lacks {}", name.to_string_lossy()))
        } else {
            Ok(f)
        }
    };
    // SAFETY: each symbol is the C function of that name in OpenCSD's C interface, whose
    // signature (opencsd_c_api.h, version 1.x) the type it is given here spells.
    unsafe {
        Ok(Api {
            create_tree: std::mem::transmute::<*mut c_void, CreateTree>(symbol(c"ocsd_create_dcd_tree")?),
            destroy_tree: std::mem::transmute::<*mut c_void, DestroyTree>(symbol(c"ocsd_destroy_dcd_tree")?),
            process: std::mem::transmute::<*mut c_void, Process>(symbol(c"ocsd_dt_process_data")?),
            set_element_fn: std::mem::transmute::<*mut c_void, SetElementFn>(symbol(
                c"ocsd_dt_set_gen_elem_outfn",
            )?),
            create_decoder: std::mem::transmute::<*mut c_void, CreateDecoder>(symbol(
                c"ocsd_dt_create_decoder",
            )?),
            add_memory_fn: std::mem::transmute::<*mut c_void, AddMemoryFn>(symbol(
                c"ocsd_dt_add_callback_trcid_mem_acc",
            )?),
        })
    }
}

/// What a decode tree calls back: each element, and the bytes at an address.
pub trait Callbacks {
    /// A decoded element of trace `id`.
    fn element(&mut self, id: u8, element: &Element);
    /// Fills `out` with the bytes at `address` as trace `id`'s context sees them; how many.
    fn memory(&mut self, id: u8, address: u64, out: &mut [u8]) -> usize;
}

/// The size of `ocsd_generic_trace_elem` (OpenCSD 1.x, 64-bit addresses).
pub const ELEMENT_SIZE: usize = 88;

/// A decoded element: what rperf reads of it, and its bytes (`ocsd_generic_trace_elem`, zero
/// past its end, so that readers with a longer layout of a later OpenCSD read zeros).
pub struct Element {
    pub kind: u32,
    pub st_addr: u64,
    pub en_addr: u64,
    /// The context ID (the thread, as Linux sets CONTEXTIDR), when valid.
    pub context_id: Option<u32>,
    /// An instruction range's last instruction: its type (`ocsd_instr_type`: 1 a branch, 2 an
    /// indirect branch), size in bytes, and whether it executed (a taken branch).
    pub last_type: u32,
    pub last_size: u32,
    pub last_executed: bool,
    pub bytes: [u8; 128],
}

/// A decode tree and the callbacks it calls.
pub struct Tree<'a> {
    api: &'static Api,
    handle: *mut c_void,
    /// Boxed twice, so that the pointer OpenCSD keeps stays put.
    callbacks: Box<Box<dyn Callbacks + 'a>>,
    index: u64,
}

const SRC_FRAME_FORMATTED: u32 = 0;
const SRC_SINGLE: u32 = 1;
const FRAME_MEM_ALIGN: u32 = 0x04;
const FULL_DECODER: c_int = 0x02;
const MEM_SPACE_ANY: u32 = 0x1f;
const OP_DATA: u32 = 0;
const OP_EOT: u32 = 1;
const OP_RESET: u32 = 3;
const RESP_CONT: u32 = 0;
const RESP_FATAL_NOT_INIT: u32 = 6;

extern "C" fn on_element(ctx: *const c_void, _index: u64, id: u8, element: *const c_void) -> u32 {
    if element.is_null() {
        return RESP_CONT;
    }
    let mut bytes = [0u8; 128];
    // SAFETY: OpenCSD hands a valid `ocsd_generic_trace_elem` for the call's duration.
    unsafe { std::ptr::copy_nonoverlapping(element.cast::<u8>(), bytes.as_mut_ptr(), ELEMENT_SIZE) };
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    // Offsets of `ocsd_generic_trace_elem`: type 0, st_addr 8, en_addr 16, the PE context's
    // context_id 32 and flags 40 (bit 1: context ID valid), last_i_type 60, the element flags
    // 68 (bit 0: last instruction executed; bits 1-3: its size).
    let flags = u32_at(68);
    let element = Element {
        kind: u32_at(0),
        st_addr: u64_at(8),
        en_addr: u64_at(16),
        context_id: (u32_at(40) & 2 != 0).then(|| u32_at(32)),
        last_type: u32_at(60),
        last_size: (flags >> 1) & 7,
        last_executed: flags & 1 != 0,
        bytes,
    };
    // SAFETY: ctx is the `Box<dyn Callbacks>` the tree registered, alive while it decodes, and
    // OpenCSD calls back only from inside `Tree::feed`/`end`, on this thread.
    let callbacks = unsafe { &mut *(ctx as *mut Box<dyn Callbacks>) };
    let call = std::panic::AssertUnwindSafe(|| callbacks.element(id, &element));
    if std::panic::catch_unwind(call).is_err() {
        eprintln!("rperf: ETM: an internal error while handing on a trace element; decoding goes on");
    }
    RESP_CONT
}

extern "C" fn on_memory(
    ctx: *const c_void,
    address: u64,
    _space: u32,
    id: u8,
    len: u32,
    out: *mut u8,
) -> u32 {
    if out.is_null() {
        return 0;
    }
    // SAFETY: as in `on_element`; `out` holds `len` bytes OpenCSD gives to be filled.
    let (callbacks, out) = unsafe {
        (&mut *(ctx as *mut Box<dyn Callbacks>), std::slice::from_raw_parts_mut(out, len as usize))
    };
    let call = std::panic::AssertUnwindSafe(|| callbacks.memory(id, address, out));
    std::panic::catch_unwind(call).unwrap_or(0) as u32
}

/// A trace unit to decode: ETMv4 or ETE, with its registers.
#[derive(Clone)]
pub enum Unit {
    Etmv4(Etmv4Config),
    Ete(EteConfig),
}

impl<'a> Tree<'a> {
    /// A tree for frame-formatted trace (several units' streams in CoreSight frames), or for
    /// one unit's raw stream (`formatted` false), decoding `units`.
    pub fn new(
        formatted: bool,
        units: &[Unit],
        callbacks: Box<dyn Callbacks + 'a>,
    ) -> Result<Tree<'a>, String> {
        let api = api()?;
        let (src, flags) = if formatted { (SRC_FRAME_FORMATTED, FRAME_MEM_ALIGN) } else { (SRC_SINGLE, 0) };
        // SAFETY: plain values in, a handle (or null) out.
        let handle = unsafe { (api.create_tree)(src, flags) };
        if handle.is_null() {
            return Err("OpenCSD could not make a decode tree".into());
        }
        let mut tree = Tree { api, handle, callbacks: Box::new(callbacks), index: 0 };
        let ctx: *const c_void = (&mut *tree.callbacks as *mut Box<dyn Callbacks + 'a>).cast();
        for unit in units {
            let mut id = 0u8;
            let (name, cfg): (&CStr, *const c_void) = match unit {
                Unit::Etmv4(c) => (c"ETMV4I", (c as *const Etmv4Config).cast()),
                Unit::Ete(c) => (c"ETE", (c as *const EteConfig).cast()),
            };
            // SAFETY: a NUL-terminated decoder name and the configuration struct of that decoder,
            // which OpenCSD copies.
            let err = unsafe { (api.create_decoder)(handle, name.as_ptr(), FULL_DECODER, cfg, &mut id) };
            if err != 0 {
                return Err(format!(
                    "OpenCSD could not make a {} decoder (error {err})",
                    name.to_string_lossy()
                ));
            }
        }
        // After the decoders, which the element output is attached to.
        // SAFETY: `handle` is the tree's; `ctx` points at the boxed callbacks, which live as long
        // as the tree (dropped after it is destroyed), and both functions match OpenCSD's types.
        let err = unsafe {
            (api.set_element_fn)(handle, on_element, ctx);
            (api.add_memory_fn)(handle, 0, u64::MAX, MEM_SPACE_ANY, on_memory, ctx)
        };
        if err != 0 {
            return Err(format!("OpenCSD could not take a memory reader (error {err})"));
        }
        Ok(tree)
    }

    /// Decodes `data`; a stream the decoder cannot go on with is reset and decoding resumes
    /// at the next bytes. Returns how many times that happened.
    pub fn feed(&mut self, data: &[u8]) -> u32 {
        let mut at = 0usize;
        let mut resets = 0;
        while at < data.len() {
            let mut done = 0u32;
            let left = (data.len() - at).min(u32::MAX as usize) as u32;
            // SAFETY: `left` bytes from `at` lie in `data`; OpenCSD reads them during the call and
            // calls back into this tree's callbacks before it returns.
            let resp = unsafe {
                (self.api.process)(self.handle, OP_DATA, self.index, left, data[at..].as_ptr(), &mut done)
            };
            at += done as usize;
            self.index += u64::from(done);
            if resp >= RESP_FATAL_NOT_INIT || done == 0 {
                // SAFETY: a reset carries no data.
                unsafe {
                    (self.api.process)(self.handle, OP_RESET, self.index, 0, std::ptr::null(), &mut done)
                };
                resets += 1;
                if done == 0 {
                    // Skip a byte the decoder would not take, so that a bad stream ends.
                    at += 1;
                    self.index += 1;
                }
            }
        }
        resets
    }

    /// Ends the trace: the decoder hands on what it still holds.
    pub fn end(&mut self) {
        let mut done = 0u32;
        // SAFETY: the end of trace carries no data.
        unsafe { (self.api.process)(self.handle, OP_EOT, self.index, 0, std::ptr::null(), &mut done) };
    }
}

impl Drop for Tree<'_> {
    fn drop(&mut self) {
        // SAFETY: the tree's handle, destroyed once; no callback runs after this.
        unsafe { (self.api.destroy_tree)(self.handle) };
    }
}

/// OpenCSD's library is here and loads.
pub fn available() -> Result<(), String> {
    api().map(|_| ())
}
