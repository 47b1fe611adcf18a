#!/bin/sh
# A stand-in for adb, for tests: devices, push, pull and shell for the devices listed in
# $ADB_SANDBOX/serials, emulated on this machine. Device paths under /data live in
# $ADB_SANDBOX/data, under /system in $ADB_SANDBOX/system; other paths are this machine's.
# Installed packages are listed in $ADB_SANDBOX/packages, debuggable ones in
# $ADB_SANDBOX/debuggable (run-as is $ADB_SANDBOX/devbin/run-as); `am start` and
# `am instrument` run $ADB_SANDBOX/apps/PKG. The shell is not root unless $ADB_SANDBOX/rooted
# exists. Every call is logged to $ADB_SANDBOX/adb.log.
set -u
box=$ADB_SANDBOX
echo "adb $*" >> "$box/adb.log"
serials=$(cat "$box/serials" 2>/dev/null)
if [ "${1:-}" = -s ]; then
  echo "$serials" | grep -qx -- "$2" || { echo "adb: device '$2' not found" >&2; exit 1; }
  shift 2
elif [ "${1:-}" != devices ] && [ "$(echo "$serials" | grep -c .)" != 1 ]; then
  echo "adb: more than one device/emulator" >&2
  exit 1
fi
map() { case "$1" in /data/*|/system/*) echo "$box$1" ;; *) echo "$1" ;; esac; }
cmd=${1:-}
shift
case "$cmd" in
  devices)
    echo "List of devices attached"
    for s in $serials; do printf '%s\tdevice\n' "$s"; done
    echo ;;
  push)
    dst=$(map "$2")
    mkdir -p "$(dirname "$dst")" && cp "$1" "$dst" ;;
  pull)
    src=$(map "$1")
    [ -f "$src" ] || { echo "adb: error: failed to stat remote object '$1': No such file or directory" >&2; exit 1; }
    cp "$src" "$2" ;;
  shell)
    # adb joins its arguments into one command line for the device's shell: so does this.
    line=$(printf '%s ' "$@" | sed "s# /data/# $box/data/#g; s#^/data/#$box/data/#; s# /system/# $box/system/#g; s#^/system/#$box/system/#")
    case "$line" in
      "getprop ro.product.cpu.abi "*) echo x86_64 ;;
      "getprop ro.build.version.sdk "*) echo 34 ;;
      "setprop "*) ;;
      "id -u "*) if [ -e "$box/rooted" ]; then echo 0; else echo 2000; fi ;;
      "pm list packages "*)
        # The device's shell splits the line into words, quotes and all.
        eval "set -- $line"
        while IFS= read -r p; do
          case "$p" in *"$4"*) echo "package:$p" ;; esac
        done < "$box/packages" ;;
      "cmd package resolve-activity "*)
        pkg=$(echo "$line" | awk '{print $NF}')
        echo "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true"
        echo "$pkg/.MainActivity" ;;
      "am force-stop "*) eval "set -- $line"; pkill -f "^$3( |\$)" || true ;;
      "am start -n "*)
        eval "set -- $line"
        pkg=${4%%/*}
        echo "Starting: Intent { cmp=$4 }"
        setsid "$box/apps/$pkg" > /dev/null 2>&1 < /dev/null & ;;
      "am instrument "*)
        runner=$(echo "$line" | awk '{print $NF}')
        setsid "$box/apps/${runner%%/*}" > /dev/null 2>&1 < /dev/null & ;;
      *) PATH="$box/devbin:$PATH" exec sh -c "$line" ;;
    esac ;;
  *) echo "adb: unknown command $cmd" >&2; exit 1 ;;
esac
