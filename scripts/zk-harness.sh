#!/usr/bin/env bash
# Starts or stops a development ZooKeeper for shell and Python tests; see
# sidecar/devzk/zk_harness_main.cc. Example:
#   scripts/zk-harness.sh start --dir /tmp/zk --ensemble 3 && cat /tmp/zk/connect
#   scripts/zk-harness.sh stop --dir /tmp/zk
# The binary comes from $FK_BUILD_DIR, else from build/ at the repository's top.
set -euo pipefail
build_dir="${FK_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build}"
for harness in "$build_dir/sidecar/fk-zk-harness" "$build_dir/sidecar/devzk/fk-zk-harness" \
               "$build_dir/fk-zk-harness"; do
  [ -x "$harness" ] && exec "$harness" "$@"
done
echo "zk-harness.sh: fk-zk-harness not built in $build_dir" \
  "(cmake --build $build_dir --target fk-zk-harness)" >&2
exit 2
