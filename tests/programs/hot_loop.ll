; A hot loop for lli (LLVM's JIT): main calls hot_loop, which runs about a second.
define i64 @hot_loop(i64 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc2, %loop ]
  %sq = mul i64 %i, %i
  %x = xor i64 %acc, %sq
  %acc2 = add i64 %x, 7
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc2
}

define i32 @main() {
entry:
  %r = call i64 @hot_loop(i64 1500000000)
  %t = trunc i64 %r to i32
  %z = and i32 %t, 0
  ret i32 %z
}
