#!/usr/bin/env bash
# The image and the manifests as they ship, in real containers (podman 4.3, as root): builds
# fencekeeper's image from the Dockerfile and a ZooKeeper image from Debian's package
# (k8s/zookeeper), renders k8s/overlays/dev-zookeeper and k8s/overlays/example with kubectl
# kustomize, plays them with `podman kube play` on a podman network of its own, and checks what a
# cluster would show. Prints PASS/FAIL per check; exits non-zero on any failure. k8s/README.md,
# "Containers in the test suite", says what this proves and what only a real cluster can.
#
# What podman cannot do is adapted, and only that: tests/e2e/adapt_for_podman.py lists each
# change with its reason (printed below). The base images are made with debootstrap from
# Debian's archive and imported (no registry is reachable); they and the debootstrap tree are
# kept (/var/cache/fencekeeper/e2e) for the next run. Everything else the run makes (pods,
# volumes, tmpfs mounts, the network) is removed on exit, also on failure.
#   FK_E2E_KEEP=1: leave the pods running for a look.
#   FK_E2E_REUSE_IMAGES=1: use the images built by an earlier run (a quicker loop on the checks).
# --prepare makes only what needs no build of the sources (base images, the ZooKeeper image, the
# Dockerfile's deps stage: downloads, mostly); scripts/test.sh runs it beside its compiles, and
# the full run later finds those layers cached.
set -euo pipefail
mode="${1:-}"
case "$mode" in ""|--prepare) ;; *) echo "usage: pods.sh [--prepare]" >&2; exit 2 ;; esac
here="$(cd "$(dirname "$0")/../.." && pwd)"
[ "$(id -u)" = 0 ] || { echo "pods.sh: needs root (podman kube play, tmpfs mounts)" >&2; exit 2; }
bash "$here/scripts/setup.sh" --e2e

cache=/var/cache/fencekeeper/e2e
work="$(mktemp -d /tmp/fk-pods.XXXXXX)"
net="fk-e2e-$$"
passed=0 failed=0 played=()
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
# check DESCRIPTION COMMAND...: PASS when the command succeeds.
check() { local what="$1"; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
say() { echo "== $*"; }
started=$SECONDS

# podman's configuration for this run only (the machine's own is left alone).
export CONTAINERS_CONF="$work/containers.conf"
{
  echo "[containers]"
  # podman asks for RLIMIT_NOFILE and RLIMIT_NPROC of 1048576 for root's containers; where the
  # hard limits are lower (nofile 20000 on these VMs), runc fails to start any container.
  echo "default_ulimits = [\"nofile=$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 )):$(( $(ulimit -Hn) < 65536 ? $(ulimit -Hn) : 65536 ))\", \"nproc=4096:4096\"]"
  echo "[engine]"
  echo "runtime = \"RUNTIME\""
} >"$work/containers.conf.in"
sed "s/RUNTIME/runc/" "$work/containers.conf.in" >"$work/containers.conf"
echo "nofile hard limit $(ulimit -Hn): containers get the lower of it and 65536"

cleanup() {
  local rc=$?
  if [ "${FK_E2E_KEEP:-0}" = 1 ]; then
    echo "kept: pods ${played[*]}, network $net, files in $work (tmpfs mounts under volumes/)"
    return $rc
  fi
  for p in "${played[@]}"; do podman pod rm -f -t 0 "$p" >/dev/null 2>&1 || true; done
  for v in $(podman volume ls -q --filter "label=fk-e2e=$net" 2>/dev/null); do
    podman volume rm -f "$v" >/dev/null 2>&1 || true
  done
  podman network rm -f "$net" >/dev/null 2>&1 || true
  { grep -o " $work/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount "$m" || true; done
  rm -rf "$work"
  return $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- base images: debootstrap (minbase) from Debian's archive, imported as debian:12 and -slim
say "base images"
if ! podman image exists debian:12 || ! podman image exists debian:12-slim; then
  if [ ! -s "$cache/bookworm-minbase.tar" ]; then
    mkdir -p "$cache"
    rm -rf "$cache/rootfs"
    debootstrap --variant=minbase bookworm "$cache/rootfs" http://deb.debian.org/debian \
      >"$cache/debootstrap.log" 2>&1 || { tail -20 "$cache/debootstrap.log"; exit 1; }
    # What Docker's debian images leave out: downloaded packages and package lists.
    tar -C "$cache/rootfs" --exclude=./var/cache/apt/archives/*.deb \
      --exclude=./var/lib/apt/lists/* -cf "$cache/bookworm-minbase.tar.tmp" .
    mv "$cache/bookworm-minbase.tar.tmp" "$cache/bookworm-minbase.tar"
    rm -rf "$cache/rootfs"
  fi
  path_env='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  podman import --change "$path_env" "$cache/bookworm-minbase.tar" debian:12 >/dev/null
  # -slim: the same without documentation, as Docker's slim variant.
  mkdir "$work/slim"
  tar -C "$work/slim" -xf "$cache/bookworm-minbase.tar"
  rm -rf "$work/slim/usr/share/doc" "$work/slim/usr/share/man" "$work/slim/usr/share/info"
  tar -C "$work/slim" -c . | podman import --change "$path_env" - debian:12-slim >/dev/null
  rm -rf "$work/slim"
fi

# --- the runtime: crun where it works, else runc (crun fails on cgroups in hybrid mode)
runtime=runc
if command -v crun >/dev/null; then
  sed "s/RUNTIME/crun/" "$work/containers.conf.in" >"$work/containers.conf"
  if out="$(podman run --rm --network none debian:12-slim true 2>&1)"; then
    runtime=crun
  else
    echo "crun cannot run containers here ($(echo "$out" | tail -1)): using runc"
  fi
fi
sed "s/RUNTIME/$runtime/" "$work/containers.conf.in" >"$work/containers.conf"
echo "runtime: $runtime"

# --- the images
say "images"
image="$(sed -n 's/^#   docker build -t \([^ ]*\) \.$/\1/p' "$here/Dockerfile")"
zk_image="$(sed -n 's/^#   docker build -t \([^ ]*\) k8s\/zookeeper$/\1/p' "$here/k8s/zookeeper/Dockerfile")"
app_image=localhost/fk-e2e-app:latest
# podman_build WHAT LOG ARGS...: a build whose log is shown only when it fails.
podman_build() {
  local what="$1" log="$work/build-$2.log" t=$SECONDS
  shift 2
  podman build -q "$@" >"$log" 2>&1 || { tail -40 "$log"; fail "$what"; exit 1; }
  pass "$what ($((SECONDS - t)) s)"
}
if [ "${FK_E2E_REUSE_IMAGES:-0}" = 1 ] && podman image exists "$image" && podman image exists "$zk_image"; then
  echo "FK_E2E_REUSE_IMAGES=1: using $image and $zk_image as built before"
else
  podman_build "k8s/zookeeper builds $zk_image" zk -t "$zk_image" "$here/k8s/zookeeper"
  podman_build "the Dockerfile's deps stage builds" deps --target deps -f "$here/Dockerfile" "$here"
  if [ "$mode" = --prepare ]; then echo "pods.sh --prepare: $passed passed, $failed failed"; exit 0; fi
  # The host's ccache: the objects of build/ (compiled the Dockerfile's way) serve the image's.
  cache=()
  if command -v ccache >/dev/null; then
    mkdir -p "$(ccache -k cache_dir)"
    cache=(-v "$(ccache -k cache_dir):/root/.cache/ccache")
  fi
  podman_build "the Dockerfile builds $image" image "${cache[@]}" -t "$image" -f "$here/Dockerfile" \
    "$here"
fi
podman_build "the test's app image builds" app -t "$app_image" "$here/tests/e2e/app"

size_of() { podman image inspect --format '{{.Size}}' "$1"; }
image_mb=$(( $(size_of "$image") / 1000000 )) base_mb=$(( $(size_of debian:12-slim) / 1000000 ))
echo "image $image: ${image_mb} MB, of which ${base_mb} MB debian:12-slim (here: debootstrap's)"
check "the image adds at most 20 MB to its base (adds $((image_mb - base_mb)) MB)" \
  test $((image_mb - base_mb)) -le 20
bin_bytes="$(podman run --rm --network none --entrypoint stat "$image" -c %s /usr/local/bin/fencekeeper)"
check "fencekeeper in the image is stripped ($((bin_bytes / 1000000)) MB)" \
  sh -c "podman run --rm --network none --entrypoint sh $image -c \
    'grep -q debug_info /usr/local/bin/fencekeeper' && exit 1; test $bin_bytes -lt 5000000"

# --- render, adapt, play
say "render and adapt (what podman 4.3 cannot do)"
kubectl kustomize "$here/k8s/overlays/dev-zookeeper" >"$work/dev-zookeeper.yaml"
kubectl kustomize "$here/k8s/overlays/example" >"$work/example.yaml"
# A /24 for the test's network that no existing podman network uses.
used="$(podman network ls -q | xargs -r podman network inspect --format '{{range .Subnets}}{{.Subnet}} {{end}}' 2>/dev/null || true)"
for n in $(seq 100 250); do [[ " $used " == *" 10.213.$n.0/24 "* ]] || break; done
prefix="10.213.$n."
mkdir -p "$work/pods" "$work/volumes" "$work/observe"
chmod 0777 "$work/observe"
printf '{"address_prefix": "%s", "app_image": "%s", "volumes_dir": "%s", "observe_dir": "%s"}\n' \
  "$prefix" "$app_image" "$work/volumes" "$work/observe" >"$work/adapt.json"
/usr/bin/python3 "$here/tests/e2e/adapt_for_podman.py" "$work/adapt.json" "$work/pods" \
  "$work/dev-zookeeper.yaml" "$work/example.yaml"
cat "$work/pods/adaptations.txt"

podman network create --subnet "${prefix}0/24" --label "fk-e2e=$net" "$net" >/dev/null
# Memory emptyDirs as the kubelet makes them: a tmpfs of the sizeLimit, 2777, group fsGroup.
while read -r path size group; do
  mount -t tmpfs -o "size=${size/Mi/m},mode=2777,gid=$group" tmpfs "$path"
done <"$work/pods/tmpfs.txt"
# The ZooKeeper pods' claims: named volumes owned by their fsGroup.
for claim in $(grep -ho 'claimName: .*' "$work"/pods/*.yaml | cut -d' ' -f2); do
  podman volume create --label "fk-e2e=$net" "$claim" >/dev/null
  chown 1000:1000 "$(podman volume inspect --format '{{.Mountpoint}}' "$claim")"
done

ip_of() { awk -v p="$1" '$1 == p {print $2}' "$work/pods/pods.txt"; }
play() {
  podman kube play --network "$net" --ip "$(ip_of "$1")" "$work/pods/$1.yaml" >"$work/play-$1.log" 2>&1 ||
    { cat "$work/play-$1.log"; fail "podman kube play $1"; exit 1; }
  played+=("$1")
}
say "play"
for p in zookeeper-0 zookeeper-1 zookeeper-2; do play "$p"; done
# wait_for SECONDS DESCRIPTION COMMAND...: polls until the command succeeds or time runs out.
wait_for() {
  local limit="$1" what="$2"; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then fail "$what (not within ${limit} s)"; return 1; fi
    sleep 0.5
  done
  pass "$what"
}
zk_ready() { for i in 0 1 2; do podman exec "zookeeper-$i-zookeeper" zk-ready || return 1; done; }
wait_for 90 "the three ZooKeeper servers form a quorum (zk-ready, the readiness probe)" zk_ready
for p in reconciler-0 reconciler-1; do play "$p"; done

side() { echo "$1-fencekeeper"; }
app() { echo "$1-app"; }
get() { podman exec "$(app "$1")" fencectl get "$2"; }
for p in reconciler-0 reconciler-1; do
  wait_for 60 "$p: the sidecar's startup probe passes (fencectl health --ready)" \
    podman exec "$(side "$p")" fencectl health --ready
done

say "checks"
for p in reconciler-0 reconciler-1; do
  check "$p: the sidecar runs as uid 10001" \
    test "$(podman exec "$(side "$p")" id -u)" = 10001
  check "$p: the app runs as uid 10002" test "$(podman exec "$(app "$p")" id -u)" = 10002
done
ticks="$work/observe/ticks"
has_ticks() { [ -s "$ticks" ] && awk '$2 > 0 {found=1} END {exit !found}' "$ticks"; }
wait_for 30 "an app container leads with a token (FENCE_TOKEN in its reconciler's log)" has_ticks
leader="$(tail -1 "$ticks" | cut -d' ' -f3)"
echo "leader: $leader, token $(tail -1 "$ticks" | cut -d' ' -f2)"
for route in /healthz /readyz /status /metrics; do
  check "GET $route from the app container, through the shared volume" \
    sh -c "podman exec $(app reconciler-0) fencectl get $route >$work/get.out 2>&1"
done
check "/status names the lock's holder" grep -q '"reconcile"' <(get reconciler-0 /status)
# The owner label is the pod's name: $(POD_NAME) expanded from the app container's env.
check "/status names the pod as its lease's owner (\$(POD_NAME) expanded)" \
  grep -q '"reconciler-0"' <(get reconciler-0 /status)
check "/metrics has the lease gauge" grep -q '^fencekeeper_' <(get reconciler-0 /metrics)

say "ZooKeeper stopped, then back"
podman pod stop -t 5 zookeeper-0 zookeeper-1 zookeeper-2 >/dev/null
readyz_503() { { podman exec "$(side reconciler-0)" fencectl get /readyz 2>&1 || true; } | grep -q 503; }
wait_for 30 "/readyz answers 503 with ZooKeeper stopped" readyz_503
check "/healthz still 200 with ZooKeeper stopped (liveness must not restart it)" \
  sh -c "podman exec $(side reconciler-0) fencectl get /healthz >/dev/null"
podman pod start zookeeper-0 zookeeper-1 zookeeper-2 >/dev/null
wait_for 90 "/readyz answers 200 again once ZooKeeper is back" \
  podman exec "$(side reconciler-0)" fencectl get /readyz
wait_for 60 "reconciler-1's sidecar is ready again too" \
  podman exec "$(side reconciler-1)" fencectl get /readyz

say "hand-over on SIGTERM"
leader="$(tail -1 "$ticks" | cut -d' ' -f3)"
wait_for 60 "a leader reconciles after ZooKeeper's return" \
  sh -c "test \$(( \$(date +%s%N) - \$(tail -1 $ticks | cut -d' ' -f4) )) -lt 1000000000"
leader="$(tail -1 "$ticks" | cut -d' ' -f3)"
other=reconciler-0; [ "$leader" = reconciler-0 ] && other=reconciler-1
before="$(wc -l <"$ticks")"
stop_ns="$(date +%s%N)"
podman pod stop -t 40 "$leader" >/dev/null
stopped_ns="$(date +%s%N)"
echo "podman pod stop $leader took $(( (stopped_ns - stop_ns) / 1000000 )) ms"
check "$leader's sidecar stopped on SIGTERM, not SIGKILL (exit 0)" \
  test "$(podman inspect --format '{{.State.ExitCode}}' "$(side "$leader")")" = 0
check "$leader's sidecar released before it stopped (its log)" \
  sh -c "podman logs $(side "$leader") 2>&1 | grep -q 'fencekeeper stopped'"
took_over() { tail -n +"$before" "$ticks" | awk -v o="$other" '$3 == o {f=1} END {exit !f}'; }
wait_for 20 "$other takes over" took_over
first_ns="$(tail -n +"$before" "$ticks" | awk -v o="$other" '$3 == o {print $4; exit}')"
handover_ms=$(( (first_ns - stop_ns) / 1000000 ))
echo "hand-over: $handover_ms ms from podman pod stop to $other's first tick"
check "the hand-over ($handover_ms ms) beats the session timeout (10 s): nodes deleted, not expired" \
  test "$handover_ms" -lt 10000
podman pod start "$leader" >/dev/null
wait_for 60 "$leader's sidecar serves again after a restart" \
  podman exec "$(side "$leader")" fencectl health --ready

say "exclusion and tokens over the whole run"
# Ticks in time order: each token belongs to one pod, tokens never go down, and no pod ticks
# after a larger token than its own has ticked (a stale leader acting).
check "tokens rise and the two replicas never lead at once ($(wc -l <"$ticks") ticks)" \
  awk '{ if (owner[$2] != "" && owner[$2] != $3) { print "token " $2 " of two pods"; bad=1 }
         owner[$2] = $3
         if ($2 + 0 < max + 0) { print "token " $2 " after " max; bad=1 }
         if ($2 + 0 > max + 0) { max = $2; changes++ } }
       END { print changes " leader terms"; exit bad || changes < 2 }' "$ticks"
for p in reconciler-0 reconciler-1; do
  check "$p: the sidecar never restarted" \
    test "$(podman inspect --format '{{.RestartCount}}' "$(side "$p")")" = 0
  # fencectl elect --rerun stands by again after a loss: the app never exits (a one-shot job
  # would, and Kubernetes would restart it with CrashLoopBackOff delays).
  check "$p: the app container never exited (fencectl elect --rerun)" \
    test "$(podman inspect --format '{{.RestartCount}} {{.State.Running}}' "$(app "$p")")" = "0 true"
done

echo "pods.sh: $passed passed, $failed failed ($((SECONDS - started)) s)"
[ "$failed" = 0 ]
