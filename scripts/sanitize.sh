#!/usr/bin/env bash
# The sanitizer job (scripts/test.sh runs it): the MLIR-free parts (runtime,
# importers, tokenizers, sampler, scheduler, quill-run, quill-serve,
# quill-synth) built with clang-22 and instrumented, the compiler left out
# (artifacts come from the release build's quill-compile, build/bin):
#  * build-asan/: ASan + UBSan, every unit, end-to-end and serve test;
#  * build-tsan/: TSan, every unit, end-to-end and serve test, against a
#    oneTBB built instrumented (see tsan_tbb below).
# Both build incrementally (and through ccache) like build/.
# `scripts/sanitize.sh asan` or `tsan` runs one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/quill-compile ] || bash scripts/build.sh
export CCACHE_BASEDIR="$PWD"
jobs=${QUILL_JOBS:-2}
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

# The sanitizer builds run the release build's MLIR tools through wrappers
# that drop LD_LIBRARY_PATH: the release quill-compile links Debian's libtbb
# (its report probes the machine), and the TSan run points LD_LIBRARY_PATH
# at an instrumented oneTBB that only instrumented binaries can load.
tools="$PWD/build/sanitizer-tools"
mkdir -p "$tools"
for tool in quill-compile quill-opt; do
  printf '#!/bin/sh\nunset LD_LIBRARY_PATH\nexec "%s" "$@"\n' "$PWD/build/bin/$tool" > "$tools/$tool"
  chmod +x "$tools/$tool"
done

configure() { # DIR SANITIZERS
  [ -f "$1/build.ninja" ] && return 0
  cmake -S . -B "$1" -G Ninja -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
    -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" -DQUILL_SANITIZE="$2" \
    -DQUILL_COMPILER_BIN_DIR="$tools" "${launcher[@]}" >/dev/null
}

# TSan sees synchronisation only in instrumented code, and Debian's libtbb is
# not: every task TBB hands a worker would look like a race. So the TSan
# tests run against oneTBB rebuilt, with -fsanitize=thread, from Debian's
# source of the installed version (same headers and ABI), downloaded once
# from the package archive into build-tsan/tbb/. Sets tbb_lib to the
# library folder (a variable, not printed: nothing else can end up in it).
tsan_tbb() {
  local dir=$PWD/build-tsan/tbb version sha
  version=$(dpkg-query -W -f='${source:Upstream-Version}' libtbb-dev)
  case $version in
  2021.8.0) sha=7e9111b8bb59c8800bf6d0b06afe7b0891937443d2dae1ee1101c8e2ede6a7ef ;;
  *) echo "sanitize: no pinned checksum for oneTBB $version's source" >&2; return 1 ;;
  esac
  local tarball=onetbb_$version.orig.tar.xz
  mkdir -p "$dir"
  if ! echo "$sha  $dir/$tarball" | sha256sum --quiet -c - >/dev/null 2>&1; then
    curl -fsS -m 300 -o "$dir/$tarball" "http://deb.debian.org/debian/pool/main/o/onetbb/$tarball"
    echo "$sha  $dir/$tarball" | sha256sum --quiet -c - >&2
  fi
  if [ ! -d "$dir/oneTBB-$version" ]; then
    tar xf "$dir/$tarball" -C "$dir"
  fi
  if [ ! -f "$dir/build/build.ninja" ]; then
    cmake -S "$dir/oneTBB-$version" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 -DTBB_SANITIZE=thread \
      -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF \
      "${launcher[@]}" >/dev/null
  fi
  cmake --build "$dir/build" -j "$jobs" --target tbb >/dev/null
  tbb_lib=$(dirname "$(find "$dir/build" -name libtbb.so.12 | head -1)")
}

# Reports end the test that triggered them; leaks count as failures too.
export ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

if [ "${1:-asan}" = asan ]; then
  configure build-asan address,undefined
  cmake --build build-asan -j "$jobs"
  (cd build-asan && ctest --output-on-failure -j "$jobs")
fi
if [ "${1:-tsan}" = tsan ]; then
  configure build-tsan thread
  tsan_tbb
  cmake --build build-tsan -j "$jobs"
  export LD_LIBRARY_PATH="$tbb_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Debian's uninstrumented libtbb would make every task look like a race.
  # ldd's output whole first: grep -q leaving early would kill it with
  # SIGPIPE, which pipefail reports as a failure.
  deps=$(ldd build-tsan/bin/quill-unit-tests 2>&1) || true
  if ! grep -qF "$tbb_lib/libtbb.so.12" <<<"$deps"; then
    echo "sanitize: the TSan tests would not load the instrumented oneTBB in $tbb_lib" >&2
    exit 1
  fi
  (cd build-tsan && ctest --output-on-failure -j "$jobs")
fi
