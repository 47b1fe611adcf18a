#!/usr/bin/env bash
# Makes simpleperf's test recordings available to the tests. They are read in place from
# ../shared/testdata/simpleperf (or $RPERF_SIMPLEPERF_TESTDATA) when present. Otherwise they are
# fetched from their public home, AOSP's system/extras repository (simpleperf/testdata), at a
# pinned commit, into target/simpleperf-testdata: only the files the tests use (those listed in
# tests/simpleperf-testdata.sha256), each checked against its sum; a mismatch fails with the
# file's name. Prints the folder to use (for RPERF_SIMPLEPERF_TESTDATA) on stdout.
#   RPERF_TESTDATA_REPO    the repository (default https://android.googlesource.com/platform/system/extras)
#   RPERF_TESTDATA_COMMIT  the commit (full or abbreviated hash) or ref to take the files from;
#                          default ae897cdf, the commit ../shared/simpleperf comes from
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${RPERF_SIMPLEPERF_TESTDATA:-}" ]; then
  echo "$RPERF_SIMPLEPERF_TESTDATA"
  exit 0
fi
if [ -f ../shared/testdata/simpleperf/perf.data ]; then
  echo "$(cd ../shared/testdata/simpleperf && pwd)"
  exit 0
fi

repo=${RPERF_TESTDATA_REPO:-https://android.googlesource.com/platform/system/extras}
commit=${RPERF_TESTDATA_COMMIT:-ae897cdf}
sums=$PWD/tests/simpleperf-testdata.sha256
dest=$PWD/target/simpleperf-testdata
if [ -f "$dest/.complete" ] && (cd "$dest" && sha256sum --quiet -c "$sums" >/dev/null 2>&1); then
  echo "$dest"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fetching simpleperf's test recordings from $repo at $commit" >&2
git -C "$work" init -q src
git -C "$work/src" remote add origin "$repo"
git -C "$work/src" config core.sparseCheckout true
# Only the files the tests use are checked out, so only their contents are downloaded.
cut -d' ' -f3- "$sums" | sed 's|^|/simpleperf/testdata/|' > "$work/src/.git/info/sparse-checkout"
cannot_fetch() {
  echo "cannot fetch $commit from $repo: $(cat "$work/err")" >&2
  echo "put simpleperf's test recordings in ../shared/testdata/simpleperf, or point RPERF_SIMPLEPERF_TESTDATA at them" >&2
  exit 1
}
fetch() {
  git -C "$work/src" fetch -q --depth 1 --filter=blob:none origin "$1" 2>"$work/err" ||
    git -C "$work/src" fetch -q --depth 1 origin "$1" 2>"$work/err"
}
want=$commit
if [[ $commit =~ ^[0-9a-f]{7,39}$ ]]; then
  # An abbreviated hash names no ref a server can send: find it in the history of the
  # default branch (commits only, no files), then fetch it by its full hash.
  git -C "$work/src" fetch -q --filter=tree:0 origin HEAD 2>"$work/err" ||
    git -C "$work/src" fetch -q origin HEAD 2>"$work/err" || cannot_fetch
  want=$(git -C "$work/src" rev-parse -q --verify "$commit^{commit}" 2>"$work/err") || {
    echo "commit $commit is not in the history of $repo's default branch" >"$work/err"
    cannot_fetch
  }
fi
fetch "$want" || cannot_fetch
git -C "$work/src" checkout -q FETCH_HEAD
rm -rf "$dest"
mkdir -p "$dest"
cut -d' ' -f3- "$sums" | while read -r f; do
  if [ ! -f "$work/src/simpleperf/testdata/$f" ]; then
    echo "simpleperf/testdata/$f is missing at $commit of $repo" >&2
    exit 1
  fi
  mkdir -p "$dest/$(dirname "$f")"
  cp "$work/src/simpleperf/testdata/$f" "$dest/$f"
done
if ! bad=$(cd "$dest" && sha256sum --quiet -c "$sums" 2>/dev/null); then
  echo "simpleperf's test recordings at $commit of $repo differ from the ones the tests expect:" >&2
  echo "$bad" >&2
  rm -rf "$dest"
  exit 1
fi
touch "$dest/.complete"
echo "$dest"
