#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang under ASan+UBSan (build-fuzz/, -DFK_FUZZ=ON,
# only the libraries they link; -O1 and line tables only: quick to build, enough for reports) and
# runs them all at once, each for FK_FUZZ_SECONDS (default 20), from its committed seed corpus.
# New inputs go to build-fuzz/work/<target>, never into the repo. Any crash, leak, timeout,
# memory blow-up or oracle failure fails the run; the input that caused it is kept as
# build-fuzz/crashes/<target>-<kind>-<sha1> and its path printed. docs/security.md, "Fuzzing".
#   FK_FUZZ_TARGETS="rpc_calls" FK_FUZZ_SECONDS=3600 bash scripts/fuzz.sh -jobs=2 -workers=2
# Extra arguments go to every libFuzzer run; --build-only, first, builds and runs nothing
# (scripts/test.sh builds beside other work, then runs).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build_only=0
[ "${1:-}" != --build-only ] || { build_only=1; shift; }
bash "$here/scripts/setup.sh"
build="${FK_FUZZ_BUILD_DIR:-$here/build-fuzz}"
seconds="${FK_FUZZ_SECONDS:-20}"
read -r -a targets <<<"${FK_FUZZ_TARGETS:-rpc_bytes rpc_calls lock_name}"
CC=clang CXX=clang++ cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFK_FUZZ=ON \
  -DFK_SANITIZE=address,undefined -DFK_DEBUG_LEVEL=1 -DFK_OPT_LEVEL=1 -DBUILD_TESTING=OFF \
  -DFK_WERROR="${FK_WERROR:-OFF}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
[ $build_only = 0 ] || exit 0
mkdir -p "$build/crashes"
# All targets at once: each runs FK_FUZZ_SECONDS of wall time, sharing the cores.
declare -A pid
for t in "${targets[@]}"; do
  mkdir -p "$build/work/$t"
  echo "== fuzz_$t for ${seconds}s (log: $build/fuzz_$t.log)"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
      -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" "$@" \
      "$build/work/$t" "$here/tests/fuzz/corpus/$t" >"$build/fuzz_$t.log" 2>&1 &
  pid[$t]=$!
done
failed=0
for t in "${targets[@]}"; do
  log="$build/fuzz_$t.log"
  echo "== fuzz_$t"
  if wait "${pid[$t]}"; then
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^Done " "$log" || true
  else
    failed=1
    grep -v -E "^#[0-9]+\s+(NEW|REDUCE|pulse|RELOAD)|^\s+NEW_FUNC" "$log" | tail -n 60
    echo "fuzz_$t FAILED; the input: $(grep -o "Test unit written to .*" "$log" | cut -d' ' -f5-)"
    echo "reproduce: $build/tests/fuzz/fuzz_$t <input>  (FK_FUZZ_LOG=1 for the sidecar's log)"
  fi
done
exit $failed
