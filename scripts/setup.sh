#!/usr/bin/env bash
# Installs fencekeeper's Debian 12 dependencies, only those missing. Idempotent.
# The level, by argument:
#   --build-only  only what building the binaries needs (the Dockerfile's build stage).
#   --demo        that, plus what scripts/demo.sh runs: Debian's zookeeper (the jars and the Java
#                 runtime that `fencekeeper --dev` starts) and python3 (fence_client.py).
#   (none)        everything, for scripts/test.sh: the above, the tests' packages (gtest, kazoo,
#                 spin, clang for fuzzing, matplotlib for the plots, tests/k8s's kubectl and npm
#                 packages) and the container test's e2e_pkgs.
#   --e2e         the container test's packages (e2e_pkgs); with --build-only or --demo, those
#                 too; alone, only those.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
# The sidecar drives the single-threaded ZooKeeper client from its loop; tests and the bench use
# the multi-threaded runtime's synchronous API (test_pkgs). Installing the -st-dev package
# removes a -mt-dev one (they conflict on the headers).
build_pkgs=(libzookeeper-st-dev capnproto libcapnp-dev libspdlog-dev libfmt-dev libboost-dev
            cmake make g++ pkg-config
            ccache               # -DFK_CCACHE=ON: the image build reuses the plain build's objects
            prometheus-cpp-dev   # the status socket's /metrics
            default-jdk-headless libjna-java)  # client_lib/java: fencekeeper.jar
demo_pkgs=(zookeeper  # `fencekeeper --dev` runs its jars (and brings the Java runtime)
           python3)   # examples/fenced_store/fence_client.py
test_pkgs=(libzookeeper-mt2 libgtest-dev libgmock-dev libbenchmark-dev python3-kazoo python3-venv
           python3-matplotlib  # bench/plots.py
           python3-pip python3-setuptools python3-wheel procps spin
           clang libclang-rt-14-dev  # clang and libFuzzer: scripts/fuzz.sh
           python3-yaml              # tests/k8s
           iptables                  # tests/chaos: the network cuts
           golang-go                 # client_lib/go and its tests
           junit5)                   # client_lib/java's tests
# The container test (tests/e2e/pods.sh): podman with runc (crun fails on some hosts) and its
# pause process (catatonit), debootstrap for the base images, the adapter's YAML; and kubectl.
e2e_pkgs=(podman runc catatonit debootstrap uidmap iptables python3-yaml)

level= e2e=0
for arg in "$@"; do
  case "$arg" in
    --build-only) level=build ;;
    --demo) level=demo ;;
    --e2e) e2e=1 ;;
    *) echo "setup: unknown argument $arg (--build-only, --demo, --e2e or none)" >&2; exit 2 ;;
  esac
done
# No level: everything; but --e2e alone, only the container test's packages.
[ -n "$level" ] || { [ "$e2e" = 1 ] && level=none || level=full; }

pkgs=()
case "$level" in
  build) pkgs+=("${build_pkgs[@]}") ;;
  demo) pkgs+=("${build_pkgs[@]}" "${demo_pkgs[@]}") ;;
  full) pkgs+=("${build_pkgs[@]}" "${demo_pkgs[@]}" "${test_pkgs[@]}"); e2e=1
        # tests/k8s validates with node (Debian's npm brings it where missing).
        command -v npm >/dev/null || pkgs+=(npm) ;;
esac
[ "$e2e" = 1 ] && pkgs+=("${e2e_pkgs[@]}")
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
# tests/k8s and tests/e2e render with kubectl: the machine image has the apt package kubectl,
# which Debian 12's own archive lacks; where it is missing and apt cannot install it, they fail
# saying so.
if { [ "$level" = full ] || [ "$e2e" = 1 ]; } && ! command -v kubectl >/dev/null; then
  apt-get install -y -qq --no-install-recommends kubectl >/dev/null ||
    echo "setup: no kubectl package to be had: tests/k8s and tests/e2e will fail" >&2
fi
[ "$level" = full ] || exit 0
# npm_into DIR SOURCE MODULE WHAT NPM-ARGS...: installs the npm packages of SOURCE's lockfile into
# DIR, unless DIR holds that lockfile and MODULE is installed there already.
npm_into() {
  local dir="$1" source="$2" module="$3" what="$4"
  shift 4
  cmp -s "$source/package-lock.json" "$dir/package-lock.json" &&
    [ -d "$dir/node_modules/$module" ] && return 0
  echo "setup: installing $what into $dir"
  mkdir -p "$dir"
  cp "$source/package.json" "$source/package-lock.json" "$dir/"
  (cd "$dir" && npm "$@" --no-audit --no-fund --loglevel=error >/dev/null)
}
# The Kubernetes API schema validators, at the versions of tests/k8s/validator's lockfile, in a
# fixed directory outside the tree (tests/k8s reads it there and never installs).
npm_into "${FK_K8S_VALIDATOR_DIR:-/var/cache/fencekeeper/k8s-validator}" \
  "$here/tests/k8s/validator" kubernetes-models "the Kubernetes schema validators" install
# examples/js's runtime dependency (capnp-es, at its lockfile's version), likewise outside the
# tree: tests/python/test_js_example.py runs the example with it.
npm_into "${FK_JS_EXAMPLE_DIR:-/var/cache/fencekeeper/js-example}" "$here/examples/js" capnp-es \
  "the JavaScript example's capnp-es" ci --omit=dev
