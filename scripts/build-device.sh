#!/usr/bin/env bash
# Builds static rperf binaries for Android devices: target/device/arm64/rperf (aarch64, phones)
# and target/device/x86_64/rperf (the emulator's ABI). Android has no glibc, so they link
# against musl, statically; they run on any Linux of their architecture too. Installs what the
# cross-builds need when missing: the Rust targets, and a C cross-compiler for aarch64 (the
# zstd decompressor that reads perf's compressed records is C).
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(aarch64-unknown-linux-musl x86_64-unknown-linux-musl)
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "build-device.sh: aarch64-linux-gnu-gcc is missing; install gcc-aarch64-linux-gnu (apt-get install gcc-aarch64-linux-gnu)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu
fi

# rust-lld links both: the targets bring musl's C runtime themselves. The C part is plain
# object code, which the system's compilers build for either architecture.
export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
export CC_x86_64_unknown_linux_musl=gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
cargo build --profile device --target aarch64-unknown-linux-musl --bin rperf --no-default-features
cargo build --profile device --target x86_64-unknown-linux-musl --bin rperf --no-default-features

built=${CARGO_TARGET_DIR:-target}
for pair in arm64:aarch64-unknown-linux-musl x86_64:x86_64-unknown-linux-musl; do
  abi=${pair%%:*}
  triple=${pair#*:}
  mkdir -p "target/device/$abi"
  cp "$built/$triple/device/rperf" "target/device/$abi/rperf.tmp"
  mv "target/device/$abi/rperf.tmp" "target/device/$abi/rperf"
  echo "target/device/$abi/rperf: $(stat -c %s "target/device/$abi/rperf") bytes"
done
