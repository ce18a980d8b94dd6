# Shared by bench/profile_*.sh (sourced): the build directory (FK_BENCH_BUILD_DIR as for run.sh,
# default /tmp/fk-bench-build), valgrind, a RelWithDebInfo build of the sidecar and the targets
# named, and a fresh results directory with a socket directory in it.
#
#   profile_setup SCRIPT RESULTS TARGET...   # sets $here, $build and $out ($build/RESULTS)
profile_setup() {
  local script="$1" results="$2"
  shift 2
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  build="${FK_BENCH_BUILD_DIR:-/tmp/fk-bench-build}"
  command -v valgrind >/dev/null || { echo "$script: needs valgrind" >&2; exit 1; }
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
  cmake --build "$build" --target fencekeeper "$@" -j"$(nproc)" >/dev/null
  out="$build/$results"
  rm -rf "$out" && mkdir -p "$out/s"
}
