#!/usr/bin/env bash
# Builds fencekeeper and runs every test: unit tests against the in-memory ZooKeeper, integration
# and fault tests against real ZooKeeper servers (started on 127.0.0.1 by the tests themselves),
# the C ABI and Python tests, kazoo interop, the model, the manifests; a bounded fuzz run (about a
# minute, clang, ASan+UBSan: scripts/fuzz.sh); and the image and manifests in real containers
# (tests/e2e/pods.sh, podman); a seeded fault campaign of FK_CHAOS_MINUTES (default 3) minutes
# (tests/chaos/run.sh; FK_CHAOS_SEED replays one). Exits non-zero when anything fails; prints each
# stage's seconds.
#
# FK_SANITIZERS=1 (CI) runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer
# (build-asan/) instead of in the plain build: the plain build (build/) still compiles what ships,
# with every warning the optimizer adds, and runs the tests that exist only there (label
# plain-only: the model, the install tree, the manifests, glibc's heap). Then ThreadSanitizer (build-tsan/)
# runs the tests where threads meet: the client library (cancellable acquires, reconnects), the
# sidecar's ZooKeeper hand-off, the C ABI, the lease table's seqlocks; only their targets are
# built. Work that waits on the network runs beside the compiles as SCHED_IDLE: the tests'
# packages and the container test's downloads, while the plain and ASan trees compile; the TSan
# and fuzz trees compile beside the fault campaign, which asserts no timing. Nothing runs beside
# a test stage.
# FK_SKIP_PODS=1 leaves the container test out (a machine without podman's needs).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${FK_TEST_JOBS:-2}"
pods=1
[ "${FK_SKIP_PODS:-0}" = 1 ] && pods=0
logs="$(mktemp -d /tmp/fk-test.XXXXXX)"
stages=() seconds=() results=()
record() { stages+=("$1") seconds+=("$2") results+=("$3"); }
# stage NAME COMMAND...: runs it, records its seconds and result; later stages run regardless.
stage() {
  local name="$1" start=$SECONDS rc=0
  shift
  echo "== $name"
  "$@" || rc=$?
  record "$name" $((SECONDS - start)) "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")"
  return 0
}
# beside NAME COMMAND...: runs it in the background as SCHED_IDLE (it gets a CPU only when no
# stage wants it, and yields at once when one does), its output in a log of its own.
# join NAME: waits for it (a stage of its own: the wait), then records its own seconds.
declare -A beside_pid
beside() {
  local name="$1"
  shift
  ( chrt --idle -p 0 "$BASHPID" 2>/dev/null || renice -n 19 -p "$BASHPID" >/dev/null
    start=$SECONDS; rc=0; "$@" >"$logs/$name.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - start))" >"$logs/$name.done"; exit $rc ) &
  beside_pid[$name]=$!
}
join() {
  local name="$1" rc=0 took
  wait "${beside_pid[$name]}" || rc=$?
  [ $rc = 0 ] || tail -n 60 "$logs/$name.log"
  took="$(cut -d' ' -f2 "$logs/$name.done" 2>/dev/null || echo 0)"
  record "  (beside) $name" "$took" "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc): $logs/$name.log")"
  return $rc
}
table() {
  local total=0 i
  echo
  echo "stage                                                    seconds  result"
  for i in "${!stages[@]}"; do
    printf '%-56s %7d  %s\n' "${stages[$i]}" "${seconds[$i]}" "${results[$i]}"
    [[ "${stages[$i]}" == "  (beside)"* ]] || total=$((total + seconds[i]))
  done
  printf '%-56s %7d  (%d min; beside stages overlap the others)\n' "total" "$total" $((total / 60))
}
trap table EXIT
chaos_args=(--minutes "${FK_CHAOS_MINUTES:-3}")
[ -z "${FK_CHAOS_SEED:-}" ] || chaos_args+=(--seed "$FK_CHAOS_SEED")

build() {  # build DIR CMAKE-ARGS [TARGET...]
  local dir="$1" args="$2"
  shift 2
  FK_BUILD_DIR="$dir" FK_CMAKE_ARGS="$args" FK_BUILD_TARGETS="$*" bash "$here/scripts/build.sh"
}
in_dir() { (cd "$1" && shift && "$@"); }

# The tests ThreadSanitizer runs, and the test executables that hold them.
tsan_tests="LeaseTest|LeaseTableStress|LeaseTableOrderTest|CAbiTest|AcquireAsyncTest|ReconnectTest|HolderWatchTest|SessionFault|LockEngineTest|StoppedWaiter|ClientBootClock|SessionGuardTest|EngineFaultTest|ZkConformance"
tsan_targets="fk_engine_unit_tests fk_lease_table_test fk_lease_test fk_c_abi_test fk_acquire_async_test fk_reconnect_test fk_holder_watch_test fk_fault_session_test fk_fault_waiter_test fk_engine_fault_test fk_client_clock_test fk_zk_conformance_test"
# Line tables only (-g1): reports keep file:line without full debug info's compile time; the
# ASan tree at -Og (CMakeLists.txt, FK_OPT_LEVEL).
asan_args="-DBUILD_TESTING=ON -DFK_SANITIZE=address,undefined -DFK_DEBUG_LEVEL=1 -DFK_OPT_LEVEL=g"
# TSan keeps -O2: at -Og its instrumented code is slower still, and CAbiTest.CallsFromManyThreads
# (calls from many threads on one lease) failed once there; earlier -O2 runs had passed.
tsan_args="-DBUILD_TESTING=ON -DFK_SANITIZE=thread -DFK_DEBUG_LEVEL=1 -DFK_OPT_LEVEL="
# build/ as the Dockerfile compiles (line tables, through ccache): the image build then reuses
# its objects.
plain_args="-DFK_DEBUG_LEVEL=1 -DFK_CCACHE=ON"

if [ "${FK_SANITIZERS:-0}" != 1 ]; then
  stage "install packages (scripts/setup.sh)" bash "$here/scripts/setup.sh"
  stage "plain build (build/)" build "$here/build" "$plain_args"
  stage "every test (plain build)" in_dir "$here/build" \
    ctest --output-on-failure --timeout 600 -j"$jobs"
  stage "fault campaign (tests/chaos/run.sh)" env FK_BUILD_DIR="$here/build" \
    bash "$here/tests/chaos/run.sh" "${chaos_args[@]}"
  stage "fuzz: build and a bounded run (scripts/fuzz.sh)" bash "$here/scripts/fuzz.sh"
  [ $pods = 0 ] ||
    stage "containers: image, manifests, pods (tests/e2e/pods.sh)" bash "$here/tests/e2e/pods.sh"
else
  stage "install the build's packages" bash "$here/scripts/setup.sh" --build-only
  # The rest of the packages (most of the download), then the container test's downloads (base
  # images, ZooKeeper's image, the Dockerfile's deps stage), while the trees compile.
  downloads() {
    bash "$here/scripts/setup.sh"
    [ $pods = 0 ] || bash "$here/tests/e2e/pods.sh" --prepare
  }
  beside "packages and container downloads" downloads
  # What ships (and the examples), plain, with the tests configured for the plain-only ones. The
  # build-only setup level leaves the packages to the install beside it.
  build_shipped() {
    FK_SETUP_LEVEL=build-only build "$here/build" "-DBUILD_TESTING=ON $plain_args" \
      fencekeeper fencectl fencekeeper_c fencekeeper_cxx fencekeeper_jar reconcile-worker fenced-store \
      fk_memory_bound_test fk-zk-harness
  }
  stage "plain build of what ships (build/)" build_shipped
  build_asan() { FK_SETUP_LEVEL=build-only build "$here/build-asan" "$asan_args"; }
  stage "ASan+UBSan build (build-asan/)" build_asan
  stage "wait: packages and container downloads" join "packages and container downloads"
  # Nothing runs beside the tests: builds and downloads beside them (at nice 19) delayed a
  # sidecar's answers enough to fail two timing-bound tests in one CI run.
  stage "plain-only tests (model, install, k8s, glibc heap)" in_dir "$here/build" \
    ctest --output-on-failure --timeout 600 -j"$jobs" -L plain-only
  # The floods run 20 s each here instead of a minute (tests/fault/flood_test.cc).
  # tests/lsan.supp: a leak inside libzookeeper_mt at session expiry, the library's own.
  stage "every test under ASan+UBSan" in_dir "$here/build-asan" env \
    LSAN_OPTIONS="suppressions=$here/tests/lsan.supp" FK_FLOOD_SECONDS="${FK_FLOOD_SECONDS:-20}" \
    ctest --output-on-failure --timeout 900 -j"$jobs"
  # The TSan tree and the fuzz targets compile beside the fault campaign, as SCHED_IDLE: the
  # campaign asserts no timing, only safety (which must hold on a loaded machine too), and leaves
  # about a core idle; the fuzz build then fills what the TSan build's last links leave idle.
  # shellcheck disable=SC2086
  build_tsan() { build "$here/build-tsan" "$tsan_args" $tsan_targets; }
  beside "TSan build of its tests (build-tsan)" build_tsan
  beside "fuzz build (build-fuzz)" bash "$here/scripts/fuzz.sh" --build-only
  stage "fault campaign (tests/chaos/run.sh)" env FK_BUILD_DIR="$here/build" \
    bash "$here/tests/chaos/run.sh" "${chaos_args[@]}"
  stage "wait: TSan build" join "TSan build of its tests (build-tsan)"
  stage "wait: fuzz build" join "fuzz build (build-fuzz)"
  stage "the threaded tests under TSan" in_dir "$here/build-tsan" env \
    TSAN_OPTIONS="halt_on_error=1 suppressions=$here/tests/tsan.supp" \
    ctest --output-on-failure --timeout 900 -j"$jobs" -R "$tsan_tests"
  stage "fuzz: a bounded run (scripts/fuzz.sh)" bash "$here/scripts/fuzz.sh"
  if [ $pods = 1 ]; then
    stage "containers: images, manifests, pods (tests/e2e/pods.sh)" bash "$here/tests/e2e/pods.sh"
  fi
fi
for r in "${results[@]}"; do [ "$r" = ok ] || exit 1; done
