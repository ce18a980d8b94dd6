#!/usr/bin/env bash
# Installs fencekeeper's Debian 12 build and test dependencies, only those missing. Idempotent.
set -euo pipefail
pkgs=(zookeeper libzookeeper-mt-dev capnproto libcapnp-dev libspdlog-dev libfmt-dev libboost-dev
      libgtest-dev libgmock-dev libbenchmark-dev cmake make g++ pkg-config python3-kazoo python3-venv
      python3-pip python3-setuptools python3-wheel procps spin
      clang libclang-rt-14-dev  # clang and libFuzzer: scripts/fuzz.sh
      prometheus-cpp-dev)  # the status socket's /metrics
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || true
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
