// Inline-frame workload in Rust: all time goes to inner_kernel, inlined into outer_caller, on
// the line marked HOT. Usage: inline_rs [seconds=1]
use std::hint::black_box;
use std::time::{Duration, Instant};

#[inline(always)]
fn inner_kernel(acc: f64, i: u64) -> f64 {
    acc + ((i ^ 0x5a5a) as f64).sqrt() * 1.0000001 // HOT
}

#[inline(never)]
#[no_mangle]
pub extern "C" fn outer_caller(iters: u64) -> f64 {
    let mut acc = 0.0;
    for i in 0..black_box(iters) {
        acc = inner_kernel(acc, i);
    }
    acc
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < end {
        black_box(outer_caller(2_000_000));
    }
}
