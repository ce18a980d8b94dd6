#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only) and builds fencekeeper into build/.
# FK_BUILD_DIR overrides the build dir; FK_CMAKE_ARGS adds CMake flags (e.g. sanitizers);
# FK_WERROR=ON makes every warning an error (CI does).
# FK_SETUP_LEVEL picks scripts/setup.sh's level: unset or `full`, everything, with the tests
# (BUILD_TESTING=ON, set every time: what scripts/test.sh needs); `demo` or `build-only`, without
# the tests' packages, so BUILD_TESTING=OFF in a new build dir (an existing one keeps its own: a
# demo run leaves build/'s tests to scripts/test.sh and ctest). FK_BUILD_TARGETS (space-separated)
# builds only those targets.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${FK_BUILD_DIR:-$here/build}"
testing=()
case "${FK_SETUP_LEVEL:-full}" in
  full) setup=() testing=(-DBUILD_TESTING=ON) ;;
  demo) setup=(--demo) ;;
  build-only) setup=(--build-only) ;;
  *) echo "build: FK_SETUP_LEVEL=$FK_SETUP_LEVEL: full, demo or build-only" >&2; exit 2 ;;
esac
[ "${#setup[@]}" = 0 ] || [ -f "$build/CMakeCache.txt" ] || testing=(-DBUILD_TESTING=OFF)
bash "$here/scripts/setup.sh" "${setup[@]}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFK_WERROR="${FK_WERROR:-OFF}" \
  "${testing[@]}" ${FK_CMAKE_ARGS:-} >/dev/null
targets=()
for t in ${FK_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
