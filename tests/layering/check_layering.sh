#!/usr/bin/env bash
# The build's include roots enforce the layering: with exactly the include directories of a
# client_lib target, a file can include client_lib/, common/ and ipc/, and not sidecar/.
# check_layering.sh CXX "INCLUDE_DIRS" (the target's INCLUDE_DIRECTORIES, ;-separated).
set -euo pipefail
cxx="$1"
flags=()
IFS=';' read -ra dirs <<< "$2"
for d in "${dirs[@]}"; do flags+=("-I$d"); done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
compiles() {
  printf '#include "%s"\n' "$1" > "$work/probe.cc"
  "$cxx" -std=c++20 -fsyntax-only "${flags[@]}" "$work/probe.cc" 2> "$work/err"
}
for allowed in client_lib/src/client_internal.h common/duration.h common/kj_loop.h \
               ipc/lease_table_layout.h ipc/fencekeeper.capnp.h fencekeeper/client.h; do
  compiles "$allowed" || { echo "FAIL: client_lib cannot include $allowed:"; cat "$work/err"; exit 1; }
done
for forbidden in sidecar/engine/lock_name.h sidecar/rpc/sidecar_server.h; do
  if compiles "$forbidden"; then echo "FAIL: client_lib can include $forbidden"; exit 1; fi
  grep -q "No such file or directory" "$work/err" ||
    { echo "FAIL: including $forbidden failed another way:"; cat "$work/err"; exit 1; }
done
echo "ok: client_lib sees client_lib/, common/, ipc/ and not sidecar/"
