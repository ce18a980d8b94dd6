#!/usr/bin/env bash
# `cmake --install` of a build into a temp prefix, then what a user of that tree does: the files
# and sonames are there, the C++ library exports fencekeeper's API and nothing of KJ; a C and a
# C++ program built with pkg-config and with find_package(fencekeeper) take a lease through the
# installed sidecar (--dev: a private ZooKeeper on loopback); the Python package finds the
# installed library with no FENCEKEEPER_LIB.
#   usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1" src="$2"
work="$(mktemp -d /tmp/fk-install-XXXXXX)"
prefix="$work/prefix"
sidecar_pid=""
cleanup() {
  if [ -n "$sidecar_pid" ] && kill -0 "$sidecar_pid" 2>/dev/null; then
    kill -TERM "$sidecar_pid"
    for _ in $(seq 100); do kill -0 "$sidecar_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$sidecar_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [ -f "$work/sidecar.log" ] && tail -20 "$work/sidecar.log" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir="$(sed -n 's/^libdir=\${prefix}\///p' "$prefix"/lib*/pkgconfig/fencekeeper.pc | head -1)"
for f in bin/fencekeeper bin/fencectl include/fencekeeper.h include/fencekeeper/client.h \
         include/fencekeeper/status_socket.h "$libdir/libfencekeeper.so.0" \
         "$libdir/libfencekeeper++.so.0" "$libdir/pkgconfig/fencekeeper.pc" \
         "$libdir/pkgconfig/fencekeeper++.pc" "$libdir/cmake/fencekeeper/fencekeeperConfig.cmake" \
         "$libdir/cmake/fencekeeper/fencekeeperConfigVersion.cmake" share/fencekeeper/go/go.mod \
         share/fencekeeper/go/fencekeeper.go share/java/fencekeeper.jar; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for lib in fencekeeper fencekeeper++; do
  soname="$(readelf -d "$prefix/$libdir/lib$lib.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
  [ "$soname" = "lib$lib.so.0" ] || fail "lib$lib.so has soname '$soname', not lib$lib.so.0"
done
exported="$(nm -D --defined-only -C "$prefix/$libdir/libfencekeeper++.so")"
grep -q "fencekeeper::Client::connect" <<<"$exported" || fail "libfencekeeper++ lacks Client::connect"
if grep -E " (kj|capnp)::" <<<"$exported" | head -3 | grep -q .; then
  fail "libfencekeeper++ exports KJ or Cap'n Proto symbols"
fi
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"

sock="$work/run/fk.sock"
"$prefix/bin/fencekeeper" --dev --socket "$sock" >"$work/sidecar.log" 2>&1 &
sidecar_pid=$!
ready=""
for _ in $(seq 600); do  # 60 s: the private ZooKeeper's JVM starts first
  if "$prefix/bin/fencectl" --socket "$sock" health --ready >/dev/null 2>&1; then ready=1; break; fi
  kill -0 "$sidecar_pid" 2>/dev/null || fail "the installed sidecar exited"
  sleep 0.1
done
[ -n "$ready" ] || fail "the installed sidecar was not ready within 60 s"

export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
consumer="$src/tests/install/consumer"
rpath="-Wl,-rpath,$prefix/$libdir"
# shellcheck disable=SC2046  # pkg-config's words are separate arguments
cc "$consumer/app_c.c" $(pkg-config --cflags --libs fencekeeper) "$rpath" -o "$work/pc_c"
# shellcheck disable=SC2046
c++ -std=c++17 "$consumer/app_cxx.cc" $(pkg-config --cflags --libs fencekeeper++) "$rpath" \
  -o "$work/pc_cxx"
cmake -S "$consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$prefix/$libdir" >"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log" >&2
  fail "find_package(fencekeeper) failed"
}
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log" >&2
  fail "building against fencekeeper::c and fencekeeper::client failed"
}
for app in "$work/pc_c" "$work/pc_cxx" "$work/consumer/app_c" "$work/consumer/app_cxx"; do
  out="$("$app" "$sock")" || fail "$app exited $?"
  echo "$app: $out"
  grep -q "token [1-9]" <<<"$out" || fail "$app printed no token"
done

# The Python package as an installer would lay it out under the prefix, without FENCEKEEPER_LIB:
# it finds lib/libfencekeeper.so above itself.
site="$prefix/$libdir/python3/dist-packages"
mkdir -p "$site"
cp -r "$src/client_lib/python/fencekeeper" "$site/"
rm -f "$site/fencekeeper/libfencekeeper.so"
(cd "$work" && env -u FENCEKEEPER_LIB -u FK_BUILD_DIR PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 - "$sock" "$prefix/$libdir" <<'PY'
import sys
import fencekeeper
from fencekeeper import _native
with fencekeeper.Client(sys.argv[1]) as client:
    with client.lock("installed/python") as lease:
        print("python: token %d, library %s" % (lease.token, _native.lib()._name))
        assert _native.lib()._name.startswith(sys.argv[2]), _native.lib()._name
PY
) || fail "the Python package did not work from the prefix"
# The Go package from the prefix: the example, in a module of its own that replaces fencekeeper
# with the installed source, built with cgo against the installed header and library.
gomod="$work/go-example"
mkdir -p "$gomod"
cp "$src/examples/go/main.go" "$gomod/"
printf 'module installed-example\n\ngo 1.19\n\nrequire fencekeeper v0.0.0\n\nreplace fencekeeper => %s\n' \
  "$prefix/share/fencekeeper/go" >"$gomod/go.mod"
(cd "$gomod" && GOCACHE="$work/go-cache" GOFLAGS=-mod=mod CGO_CFLAGS="-I$prefix/include" \
  CGO_LDFLAGS="-L$prefix/$libdir $rpath" go build -o "$work/go_app" .) >"$work/go.log" 2>&1 || {
  cat "$work/go.log" >&2
  fail "the Go package did not build from the prefix"
}
out="$("$work/go_app" "$sock")" || fail "the Go example exited $?"
echo "$out"
grep -q "go: token [1-9]" <<<"$out" || fail "the Go example printed no token"
# The jar from the prefix: the Java example compiled and run against it, JNA finding the
# installed library through jna.library.path.
jars="$prefix/share/java/fencekeeper.jar:/usr/share/java/jna.jar"
javac -Xlint:all -Werror -cp "$jars" -d "$work/java" "$src/examples/java/LeaseExample.java" \
  || fail "the Java example did not compile against the installed jar"
out="$(env -u FENCEKEEPER_LIB java -Djna.library.path="$prefix/$libdir" -cp "$work/java:$jars" \
  LeaseExample "$sock")" || fail "the Java example exited $?"
echo "$out"
grep -q "java: token [1-9]" <<<"$out" || fail "the Java example printed no token"
echo "PASS"
