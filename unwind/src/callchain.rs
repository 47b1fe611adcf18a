//! Kernel-recorded call chains (PERF_SAMPLE_CALLCHAIN): context markers removed, each address
//! tagged with the context it belongs to and with what it means (the sampled instruction, or a
//! return address to look up one byte earlier).

use crate::CodeAddress;

/// Which address space a frame belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// The kernel.
    Kernel,
    /// User space.
    User,
    /// A guest or other context rperf does not symbolize.
    Other,
}

/// One entry of a call chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainFrame {
    /// The address as recorded: the sampled instruction for the chain's first entry, return
    /// addresses after it (a user frame under kernel frames is where the kernel will return to).
    pub addr: CodeAddress,
    /// Its context.
    pub context: Context,
}

const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;
const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
const PERF_CONTEXT_USER: u64 = (-512i64) as u64;

/// Splits a raw call chain into frames, dropping context markers and zero addresses, and
/// appends them to `out`. `default` is the context of entries before the first marker.
pub fn split_callchain(raw: impl IntoIterator<Item = u64>, default: Context, out: &mut Vec<ChainFrame>) {
    let mut ctx = default;
    let first = out.len();
    for addr in raw {
        if addr >= PERF_CONTEXT_MAX {
            ctx = match addr {
                PERF_CONTEXT_KERNEL => Context::Kernel,
                PERF_CONTEXT_USER => Context::User,
                _ => Context::Other,
            };
            continue;
        }
        if addr == 0 {
            continue;
        }
        let addr = if out.len() == first {
            CodeAddress::InstructionPointer(addr)
        } else {
            CodeAddress::ReturnAddress(addr)
        };
        out.push(ChainFrame { addr, context: ctx });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_removed() {
        let raw =
            [PERF_CONTEXT_KERNEL, 0xffff_8000_1000, 0xffff_8000_2000, PERF_CONTEXT_USER, 0x4000, 0, 0x5000];
        let mut f = vec![];
        split_callchain(raw, Context::User, &mut f);
        assert_eq!(f.len(), 4);
        assert_eq!(
            (f[0].context, f[0].addr),
            (Context::Kernel, CodeAddress::InstructionPointer(0xffff_8000_1000))
        );
        assert_eq!((f[2].addr, f[2].context), (CodeAddress::ReturnAddress(0x4000), Context::User));
        assert_eq!(f[2].addr.lookup(), 0x3fff);
    }
}
