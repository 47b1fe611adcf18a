#!/bin/sh
# A stand-in for Android's run-as on the device adb.sh emulates: `run-as PKG CMD [ARGS...]` runs
# CMD in the app's data folder ($ADB_SANDBOX/data/data/PKG) when the app is debuggable (listed
# in $ADB_SANDBOX/debuggable), and refuses other apps as run-as does.
pkg=$1
shift
if ! grep -qx -- "$pkg" "$ADB_SANDBOX/debuggable" 2>/dev/null; then
  echo "run-as: package not debuggable: $pkg" >&2
  exit 1
fi
dir="$ADB_SANDBOX/data/data/$pkg"
mkdir -p "$dir" && cd "$dir" && exec "$@"
