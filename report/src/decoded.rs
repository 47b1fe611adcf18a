//! Sample records decoded into what making their stacks needs: ids, period, the call chain as
//! recorded, the counter group's values, the branch stack, and the user stack unwound from the
//! registers and stack memory it copied (DWARF mode).

use linux_perf_data::linux_perf_event_reader::{CpuMode, EventRecord, RawEventRecord, SampleRecord};
use rperf_unwind::{
    split_callchain, Arch, ChainFrame, CodeAddress, Context, ProcessUnwinder, Regs, UnwindCache,
};

const MAX_UNWIND_FRAMES: usize = 1024;

/// A sample decoded: what making its stack needs, and the stack unwound from its registers and
/// copied stack memory (DWARF mode).
pub(crate) struct Decoded<'a> {
    pub(crate) attr: usize,
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) time: u64,
    pub(crate) cpu: u32,
    pub(crate) period: u64,
    /// Its call chain as recorded, or its instruction pointer; once unwound (DWARF mode), the
    /// kernel part as recorded and the user part unwound.
    pub(crate) chain: Vec<ChainFrame>,
    /// The user registers and stack, in DWARF mode.
    pub(crate) user: Option<(Regs, std::borrow::Cow<'a, [u8]>)>,
    /// Its unwinding stopped early.
    pub(crate) truncated: bool,
    /// Its tracepoint data.
    pub(crate) raw: Option<std::borrow::Cow<'a, [u8]>>,
    /// The values of its counter group, by event (simpleperf's `--add-counter`).
    pub(crate) group: Vec<crate::profile::GroupValue>,
    /// Its branch stack's taken branches, (from, to), newest first (with `-b`).
    pub(crate) branches: Vec<(u64, u64)>,
}

impl<'a> Decoded<'a> {
    pub(crate) fn new(
        attr: usize,
        raw: &RawEventRecord<'a>,
        arch: Arch,
        event_of_id: &Option<std::collections::HashMap<u64, usize>>,
        chain: Vec<ChainFrame>,
        branches: bool,
    ) -> Option<Decoded<'a>> {
        let mut d = match raw.parse() {
            Ok(EventRecord::Sample(s)) => decoded(attr, &s, arch, event_of_id, chain),
            Ok(_) => return None,
            Err(_) => {
                let mut rewritten = Vec::new();
                let s = crate::decode::reparse_read_group_sample(raw, &mut rewritten)?;
                decoded(attr, &s, arch, event_of_id, chain).into_owned()
            }
        };
        if let Some(values) = crate::decode::group_values(raw) {
            let event = |i: usize, id: Option<u64>| match (event_of_id, id) {
                (Some(events), Some(id)) => events.get(&id).copied(),
                _ => Some(d.attr + i),
            };
            d.group = values
                .iter()
                .enumerate()
                .filter_map(|(i, &(value, id))| {
                    let event = event(i, id)? as u32;
                    Some(crate::profile::GroupValue { event, id: id.unwrap_or(0), value })
                })
                .collect();
        }
        if branches {
            d.branches = crate::decode::branch_stack(raw).unwrap_or_default();
        }
        Some(d)
    }

    /// The same, holding its own copy of the stack.
    fn into_owned(self) -> Decoded<'static> {
        let user = self.user.map(|(regs, stack)| (regs, std::borrow::Cow::Owned(stack.into_owned())));
        let raw = self.raw.map(|r| std::borrow::Cow::Owned(r.into_owned()));
        Decoded { user, raw, ..self }
    }

    /// Keeps only the sampled frame: the call chain's first, or, when the chain holds no
    /// kernel frame, the user registers' instruction pointer. Nothing is unwound, and the
    /// stack is not known to be truncated.
    pub(crate) fn leaf_only(&mut self) {
        if let Some((regs, _)) = self.user.take() {
            if !self.chain.iter().any(|f| f.context == Context::Kernel) {
                self.chain.clear();
                self.chain.push(ChainFrame {
                    addr: CodeAddress::InstructionPointer(regs.ip),
                    context: Context::User,
                });
            }
        }
        self.chain.truncate(1);
    }

    /// Unwinds the user stack with the unwinder of its process (None: a process the recording
    /// never described, whose stack stops at the sampled instruction).
    pub(crate) fn unwind(&mut self, unwinder: Option<&ProcessUnwinder>) {
        let Some((regs, stack)) = &self.user else { return };
        let chain = &mut self.chain;
        chain.retain(|f| f.context == Context::Kernel);
        // Under kernel frames, the user instruction pointer is where the kernel returns to.
        let under_kernel = !chain.is_empty();
        let mut user = |f: CodeAddress| {
            let addr = match f {
                CodeAddress::InstructionPointer(a) if under_kernel => CodeAddress::ReturnAddress(a),
                other => other,
            };
            chain.push(ChainFrame { addr, context: Context::User });
        };
        self.truncated = match unwinder {
            Some(u) => UNWIND_CACHE
                .with_borrow_mut(|cache| u.unwind_each(cache, *regs, stack, MAX_UNWIND_FRAMES, &mut user)),
            None => {
                user(CodeAddress::InstructionPointer(regs.ip));
                true
            }
        };
    }
}

/// A sample's fields as stacks are made of them.
fn decoded<'a>(
    attr: usize,
    s: &SampleRecord<'a>,
    arch: Arch,
    event_of_id: &Option<std::collections::HashMap<u64, usize>>,
    mut chain: Vec<ChainFrame>,
) -> Decoded<'a> {
    let attr = match (event_of_id, s.id) {
        (Some(events), Some(id)) => events.get(&id).copied().unwrap_or(attr),
        _ => attr,
    };
    let pid = s.pid.unwrap_or(-1);
    let default_ctx = match s.cpu_mode {
        CpuMode::Kernel => Context::Kernel,
        CpuMode::User => Context::User,
        _ => Context::Other,
    };
    let stack = s.user_stack.as_ref().filter(|(d, dyn_size)| !d.is_empty() && *dyn_size > 0);
    // Room for the frames unwinding adds, so that they seldom move the chain.
    let recorded = s.callchain.as_ref().map_or(1, |cc| cc.len());
    chain.clear();
    chain.reserve(recorded + if stack.is_some() { 64 } else { 0 });
    match &s.callchain {
        Some(cc) if !cc.is_empty() => {
            split_callchain((0..cc.len()).filter_map(|i| cc.get(i)), default_ctx, &mut chain)
        }
        _ => chain.extend(
            s.ip.map(|ip| ChainFrame { addr: CodeAddress::InstructionPointer(ip), context: default_ctx }),
        ),
    }
    let regs = s.user_regs.as_ref().and_then(|r| Regs::from_perf(arch, |n| r.get(n)));
    let user = match (regs, stack) {
        (Some(regs), Some((data, dyn_size))) => {
            let len = (*dyn_size as usize).min(data.len());
            let bytes = match data.as_slice() {
                std::borrow::Cow::Borrowed(b) => std::borrow::Cow::Borrowed(&b[..len]),
                std::borrow::Cow::Owned(b) => std::borrow::Cow::Owned(b[..len].to_vec()),
            };
            Some((regs, bytes))
        }
        _ => None,
    };
    Decoded {
        attr,
        pid,
        tid: s.tid.unwrap_or(pid),
        time: s.timestamp.unwrap_or(0),
        cpu: s.cpu.unwrap_or(0),
        period: s.period.unwrap_or(1),
        chain,
        user,
        truncated: false,
        raw: s.raw.map(|r| r.as_slice()),
        group: Vec::new(),
        branches: Vec::new(),
    }
}

thread_local! {
    /// Each thread's unwinding cache: the unwind rules found at recent addresses.
    static UNWIND_CACHE: std::cell::RefCell<UnwindCache> = std::cell::RefCell::new(UnwindCache::new());
}
