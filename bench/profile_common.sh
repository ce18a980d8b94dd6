# Shared by bench/profile_*.sh (sourced): the build directory (FK_BENCH_BUILD_DIR as for run.sh,
# default /tmp/fk-bench-build), the profiler, a RelWithDebInfo build of the sidecar and the
# targets named, and a fresh results directory with a socket directory in it.
#
#   profile_setup SCRIPT RESULTS TOOL TARGET...   # sets $here, $build and $out ($build/RESULTS)
profile_setup() {
  local script="$1" results="$2" tool="$3"
  shift 3
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build="${FK_BENCH_BUILD_DIR:-/tmp/fk-bench-build}"
  command -v "$tool" >/dev/null || { echo "$script: needs $tool" >&2; exit 1; }
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
  cmake --build "$build" --target fencekeeper "$@" -j"$(nproc)" >/dev/null
  out="$build/$results"
  rm -rf "$out" && mkdir -p "$out/s"
}

# A `fencekeeper --dev` sidecar (its own ZooKeeper on 127.0.0.1) in $out, stopped by PID ($pid):
#   run_sidecar [WRAPPER...]   # starts it under WRAPPER, waits for its socket $sock (120 s:
#                              # valgrind slows its start 20-50x)
#   stop                       # stops it (an EXIT trap)
# Its log level: $sidecar_log_level, warn unless set; more flags: the array $sidecar_flags.
sock=""
pid=""
stop() { [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; }
run_sidecar() {
  sock="$out/s/fk.sock"
  rm -f "$sock"
  "$@" "$build/sidecar/fencekeeper" --dev --dev-data "$out/zk" --socket "$sock" \
    --log-level "${sidecar_log_level:-warn}" ${sidecar_flags[@]+"${sidecar_flags[@]}"} \
    >>"$out/sidecar.log" 2>&1 &
  pid=$!
  for _ in $(seq 1200); do [ -S "$sock" ] && return 0; sleep 0.1; done
  echo "$0: the sidecar did not bind $sock (log: $out/sidecar.log)" >&2
  exit 1
}
