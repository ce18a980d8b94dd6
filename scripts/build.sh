#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages only) and builds fencekeeper into build/.
# FK_BUILD_DIR overrides the build dir; FK_CMAKE_ARGS adds CMake flags (e.g. sanitizers);
# FK_WERROR=ON makes every warning an error (CI does).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bash "$here/scripts/setup.sh"
build="${FK_BUILD_DIR:-$here/build}"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFK_WERROR="${FK_WERROR:-OFF}" \
  ${FK_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
