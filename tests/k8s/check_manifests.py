#!/usr/bin/env python3
"""Checks k8s/ against the API schema and the built binaries, offline.

Renders every kustomization (kubectl kustomize), validates every object (tests/k8s/validate.cjs,
schema of the npm package kubernetes-models, installed by scripts/setup.sh), then for each pod
with the fencekeeper sidecar: its command line passes the built `fencekeeper --check-config`,
the probes ask the status socket that prints, every $(VAR) is defined, the sockets are on the shared memory volume, the
uids, security context and grace period are as k8s/README.md says. Then the runtime image's
files (scripts/runtime-files.sh) run in a chroot. The image itself is built and run with these
manifests by tests/e2e/pods.sh (podman).

usage: check_manifests.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

SOURCE, BUILD = sys.argv[1], sys.argv[2]
VALIDATOR = os.environ.get("FK_K8S_VALIDATOR_DIR", "/var/cache/fencekeeper/k8s-validator")
FENCEKEEPER = os.path.join(BUILD, "sidecar", "fencekeeper")
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(argv, env=None, **kw):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, **kw)


def require_tools():
    if shutil.which("kubectl") is None:
        sys.exit("FAIL kubectl is not installed: scripts/setup.sh installs it (apt package kubectl)")
    if shutil.which("node") is None:
        sys.exit("FAIL node is not installed: scripts/setup.sh installs npm and node")
    if not os.path.isdir(os.path.join(VALIDATOR, "node_modules", "kubernetes-models")):
        sys.exit(f"FAIL the Kubernetes schema validators are not in {VALIDATOR}: run "
                 "scripts/setup.sh once with the npm registry reachable (this test never "
                 "installs anything)")


def kustomizations():
    """Every kustomization under k8s/ that renders on its own (components render in overlays)."""
    found = []
    for root, _, files in os.walk(os.path.join(SOURCE, "k8s")):
        if "kustomization.yaml" in files:
            with open(os.path.join(root, "kustomization.yaml")) as f:
                if yaml.safe_load(f).get("kind", "Kustomization") == "Kustomization":
                    found.append(os.path.relpath(root, SOURCE))
    return sorted(found)


def render(kdir):
    out = run(["kubectl", "kustomize", os.path.join(SOURCE, kdir)])
    if not check(out.returncode == 0, f"{kdir} renders" + (": " + out.stderr.strip()
                                                            if out.returncode else "")):
        return []
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def validate(kdir, objects):
    out = run(["node", os.path.join(SOURCE, "tests", "k8s", "validate.cjs"), VALIDATOR],
              input=json.dumps(objects))
    sys.stdout.write("".join("     " + l + "\n" for l in out.stdout.splitlines()))
    check(out.returncode == 0, f"{kdir}: every object validates against the API schema"
          + (": " + out.stderr.strip() if out.stderr.strip() else ""))


def parse_config(stdout):
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def check_config(name, args, env, root, mounts):
    """`fencekeeper ARGS --check-config` as the pod would run it: in the runtime files' chroot,
    with the container's volumes as the kubelet makes them (an emptyDir is 2777 with fsGroup),
    since where the sockets go depends on their directory. Returns the key=value answer."""
    built = run([FENCEKEEPER] + args + ["--check-config"], env=env)
    check(built.returncode == 0, f"{name}: the build's fencekeeper {' '.join(args)} "
          f"--check-config exits 0" + (f" (exit {built.returncode}: {built.stderr.strip()})"
                                       if built.returncode else ""))
    if root is None or built.returncode:
        return None
    made, created = [], []  # the mount points; the topmost directories made for them
    for path, mode in mounts:
        target = os.path.join(root, path.lstrip("/"))
        top = target
        while not os.path.exists(os.path.dirname(top)):
            top = os.path.dirname(top)
        if not os.path.exists(top):
            created.append(top)
        os.makedirs(target)
        os.chmod(target, mode)
        made.append(target)
    try:
        r = run([CHROOT, root, "/usr/local/bin/fencekeeper"] + args + ["--check-config"], env=env)
        check(r.returncode == 0, f"{name}: in the image's files, with the pod's volumes, "
              "--check-config exits 0" + (f": {r.stderr.strip()}" if r.returncode else ""))
        check(all(not os.listdir(m) for m in made),
              f"{name}: --check-config created nothing in the volumes")
        return parse_config(r.stdout) if r.returncode == 0 else None
    finally:
        for top in created:
            shutil.rmtree(top)


def literal_env(container):
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def undefined_vars(container):
    """$(VAR)s in command and args that the container's env does not define: Kubernetes passes
    those through as the literal text $(VAR)."""
    defined = {e["name"] for e in container.get("env", [])}
    used = {m for a in container.get("command", []) + container.get("args", [])
            for m in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a)}
    return sorted(used - defined)


def quantity_bytes(text):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "M": 10**6, "G": 10**9}
    for suffix, factor in units.items():
        if str(text).endswith(suffix):
            return int(float(str(text)[:-len(suffix)]) * factor)
    return int(text)


def lease_table_bytes(max_leases):
    """The table's file size: a header and a slot per lease, as ipc/lease_table_layout.h says."""
    with open(os.path.join(SOURCE, "ipc", "lease_table_layout.h")) as f:
        layout = f.read()
    size = {k: int(re.search(rf"k{k}Bytes = (\d+);", layout).group(1)) for k in ("Header", "Slot")}
    return size["Header"] + max_leases * size["Slot"]


def documented_image():
    with open(os.path.join(SOURCE, "Dockerfile")) as f:
        m = re.search(r"docker build -t (\S+) \.", f.read())
    check(m is not None, "the Dockerfile documents its image name (docker build -t NAME .)")
    return m.group(1) if m else None


def check_sidecar_pod(kdir, workload, image, root):
    name = f"{kdir}: {workload['kind']} {workload['metadata']['name']}"
    pod = workload["spec"]["template"]["spec"]
    sidecar = next(c for c in pod["initContainers"] if c["name"] == "fencekeeper")
    apps = pod["containers"]
    check(sidecar.get("restartPolicy") == "Always", f"{name}: a native sidecar (restartPolicy)")
    for c in pod.get("initContainers", []) + pod["containers"]:
        missing = undefined_vars(c)
        check(not missing, f"{name}: {c['name']}: every $(VAR) of its command is in its env"
              + (f" (not: {', '.join(missing)})" if missing else ""))
    check(sidecar.get("image") == image, f"{name}: sidecar image {sidecar.get('image')} is the "
          f"Dockerfile's {image}")
    check(sidecar.get("command") == ["fencekeeper"], f"{name}: runs fencekeeper")
    env = {k: v for k, v in literal_env(sidecar).items() if k.startswith("FENCEKEEPER_")}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [(m["mountPath"], 0o2777 if "emptyDir" in volumes.get(m["name"], {}) else 0o755)
              for m in sidecar.get("volumeMounts", [])]
    config = check_config(name, sidecar.get("args", []), env, root, mounts)
    if config is None:
        return None
    socket, status = config["socket"], config["status-socket"]
    check(status != "none", f"{name}: the status socket is on ({status})")

    # Probes: liveness /healthz, readiness and startup /readyz. Neither side names the status
    # socket: both derive it from the lease socket (its default /run/fencekeeper/fencekeeper.sock
    # for fencectl), so it is the same path in every layout, whatever directory it binds in.
    check("--status-socket" not in sidecar.get("args", []),
          f"{name}: the status socket is the default, beside the lease socket ({status})")
    check(socket == "/run/fencekeeper/fencekeeper.sock",
          f"{name}: the lease socket is fencectl's default, which the probes use")
    health = ["fencectl", "health"]
    ready = ["fencectl", "health", "--ready"]
    for probe, want in (("startupProbe", ready), ("readinessProbe", ready),
                        ("livenessProbe", health)):
        got = sidecar.get(probe, {}).get("exec", {}).get("command")
        check(got == want, f"{name}: {probe} is `{' '.join(want)}` (got {got})")

    # The lease socket on the shared memory volume, mounted at its directory in every container;
    # the status socket beside it, its name derived from the lease socket's.
    check(status.startswith(socket), f"{name}: the status socket {status} is beside the lease "
          f"socket {socket}, named after it")
    def mount_of(container, directory):
        return next((m for m in container.get("volumeMounts", [])
                     if m["mountPath"].rstrip("/") == directory), None)
    for path in (socket,):
        mount = mount_of(sidecar, os.path.dirname(path))
        if check(mount is not None, f"{name}: {path}'s directory is a volume of the sidecar"):
            vol = volumes.get(mount["name"], {})
            check(vol.get("emptyDir", {}).get("medium") == "Memory",
                  f"{name}: volume {mount['name']} is an emptyDir in memory")
            for app in apps:
                m = mount_of(app, os.path.dirname(path))
                check(m is not None and m["name"] == mount["name"],
                      f"{name}: container {app['name']} mounts {mount['name']} at "
                      f"{os.path.dirname(path)}")
                # An emptyDir has no sticky bit: only a read-only mount keeps the app's uid from
                # renaming the sidecar's socket directory away.
                check(m is not None and m.get("readOnly") is True,
                      f"{name}: container {app['name']} mounts {mount['name']} read-only")
    # The lease table lives in that volume too: a memory emptyDir's sizeLimit is a tmpfs of that
    # size, and a table larger than it dies of SIGBUS on the first slot past the limit.
    run_volume = volumes.get((mount_of(sidecar, os.path.dirname(socket)) or {}).get("name"), {})
    limit = quantity_bytes(run_volume.get("emptyDir", {}).get("sizeLimit", "0"))
    table = lease_table_bytes(int(config["max-leases"]))
    check(config["lease-table"] == "none" or limit >= table + 64 * 1024,
          f"{name}: the socket volume's sizeLimit ({limit} bytes) holds the lease table "
          f"({table} bytes for --max-leases {config['max-leases']}) and the sockets")
    for app in apps:
        check(literal_env(app).get("FENCEKEEPER_SOCKET") == socket,
              f"{name}: container {app['name']} is given FENCEKEEPER_SOCKET={socket}")

    # One uid per party: the app's own uid is the one allowed, and it is told the sidecar's.
    pod_sc = pod.get("securityContext", {})
    check(pod_sc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
          f"{name}: seccomp RuntimeDefault")
    check(pod_sc.get("runAsNonRoot") is True, f"{name}: runAsNonRoot")
    sidecar_uid = sidecar["securityContext"].get("runAsUser", pod_sc.get("runAsUser"))
    allowed = config["allow-uid"].split(",") if config["allow-uid"] else []
    for c in [sidecar] + apps:
        sc = c.get("securityContext", {})
        check(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation")
              is False and sc.get("capabilities", {}).get("drop") == ["ALL"],
              f"{name}: {c['name']}: read-only root, no privilege escalation, capabilities "
              "drop ALL")
        res = c.get("resources", {})
        check("cpu" in res.get("requests", {}) and "memory" in res.get("limits", {}),
              f"{name}: {c['name']}: cpu request and memory limit")
    for app in apps:
        uid = app.get("securityContext", {}).get("runAsUser", pod_sc.get("runAsUser"))
        check(uid is not None and uid != sidecar_uid,
              f"{name}: {app['name']} runs as uid {uid}, not the sidecar's {sidecar_uid}")
        check(str(uid) in allowed, f"{name}: --allow-uid ({config['allow-uid']}) names "
              f"{app['name']}'s uid {uid}")
        check(literal_env(app).get("FENCEKEEPER_EXPECT_UID") == str(sidecar_uid),
              f"{name}: {app['name']} expects the sidecar's uid {sidecar_uid}")
        pod_name = next((e for e in app.get("env", []) if e["name"] == "POD_NAME"), {})
        check(pod_name.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
              == "metadata.name", f"{name}: {app['name']} gets the pod name (owner label)")

    # The grace period covers the app's shutdown and the sidecar's own shutdown wait, and
    # k8s/README.md states the same arithmetic.
    grace = pod.get("terminationGracePeriodSeconds", 30)
    wait_s = int(config["shutdown-wait-ms"]) / 1000
    timeout_s = int(config["session-timeout-ms"]) / 1000
    app_s = max(int(literal_env(a).get("APP_SHUTDOWN_SECONDS", "-1")) for a in apps)
    check(app_s >= 0, f"{name}: the app states its shutdown bound (APP_SHUTDOWN_SECONDS)")
    check(grace >= app_s + wait_s, f"{name}: terminationGracePeriodSeconds {grace} >= app "
          f"shutdown {app_s} s + sidecar shutdown wait {wait_s:g} s")
    sentence = (f"{app_s} s app shutdown + {wait_s:g} s sidecar shutdown wait (session timeout "
                f"{timeout_s:g} s + {wait_s - timeout_s:g} s) + {grace - app_s - wait_s:g} s "
                f"slack = {grace} s")
    for doc in ("k8s/README.md", "docs/operations.md"):
        with open(os.path.join(SOURCE, doc)) as f:
            text = " ".join(f.read().split())
        check(sentence in text, f"{doc} states the grace period as: {sentence}")
    return {"args": sidecar.get("args", []), "env": env, "config": config,
            "labels": workload["spec"]["template"]["metadata"].get("labels", {})}


def check_zookeeper(kdir, objects, sidecars):
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    sts = by_kind.get("StatefulSet", [{}])[0]
    check(sts.get("spec", {}).get("replicas") == 3, f"{kdir}: a 3-server StatefulSet")
    pod_labels = sts["spec"]["template"]["metadata"]["labels"]
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    headless = services.get(sts["spec"].get("serviceName"), {})
    check(headless.get("spec", {}).get("clusterIP") == "None",
          f"{kdir}: the StatefulSet's service {sts['spec'].get('serviceName')} is headless")
    selects = lambda selector: all(pod_labels.get(k) == v for k, v in selector.items())
    pdb = by_kind.get("PodDisruptionBudget", [{}])[0]
    check(selects(pdb.get("spec", {}).get("selector", {}).get("matchLabels", {"-": "-"})),
          f"{kdir}: the PodDisruptionBudget covers the servers")
    policy = by_kind.get("NetworkPolicy", [{}])[0]
    check(selects(policy.get("spec", {}).get("podSelector", {}).get("matchLabels", {"-": "-"})),
          f"{kdir}: the NetworkPolicy covers the servers")
    client_rules = [r for r in policy["spec"].get("ingress", [])
                    if any(p.get("port") == 2181 for p in r.get("ports", []))]
    client_selectors = [f["podSelector"].get("matchLabels", {}) for r in client_rules
                        for f in r.get("from", [])]
    check(client_selectors and all("podSelector" in f and len(f) == 1 for r in client_rules
                                   for f in r.get("from", [])),
          f"{kdir}: the client port admits only selected pods")
    for s in sidecars:
        zk = s["env"].get("FENCEKEEPER_ZK", s["config"]["zk"])
        host, port = zk.split(",")[0].split("/")[0].split(":")
        svc = services.get(host.split(".")[0], {})
        check(any(p["port"] == int(port) for p in svc.get("spec", {}).get("ports", [])),
              f"{kdir}: the sidecar's --zk {zk} is a Service of this overlay")
        check(any(all(s["labels"].get(k) == v for k, v in sel.items())
                  for sel in client_selectors if not selects(sel)),
              f"{kdir}: the NetworkPolicy admits the sidecar's pods (labels {s['labels']})")


def assemble_runtime(root):
    """The runtime stage's files, with the C runtime, as a root to chroot into."""
    if not check(os.geteuid() == 0, "running as root (chroot)"):
        return None
    out = run(["bash", os.path.join(SOURCE, "scripts", "runtime-files.sh"), BUILD, root,
               "--with-base"])
    if not check(out.returncode == 0, "scripts/runtime-files.sh assembles the runtime files"
                 + (": " + out.stderr.strip() if out.returncode else "")):
        return None
    print("     " + " ".join(out.stdout.split()))
    r = run([CHROOT, root, "/usr/local/bin/fencekeeper", "--help"], env={})
    check(r.returncode == 0 and r.stdout.startswith("usage: fencekeeper"),
          "chroot: fencekeeper --help")
    r = run([CHROOT, root, "/usr/local/bin/fencectl", "--help"], env={})
    check("usage" in r.stdout + r.stderr and r.returncode in (0, 64), "chroot: fencectl --help")
    r = run([CHROOT, root, "/usr/lib64/ld-linux-x86-64.so.2", "--library-path",
             "/usr/local/lib", "--list", "/usr/local/lib/libfencekeeper.so"], env={})
    check(r.returncode == 0 and "not found" not in r.stdout,
          "chroot: libfencekeeper.so's libraries resolve")
    return root


def main():
    require_tools()
    image = documented_image()
    runtime = tempfile.mkdtemp(prefix="fk-runtime-")
    try:
        return check_all(image, assemble_runtime(runtime))
    finally:
        shutil.rmtree(runtime)


def check_all(image, root):
    sidecars, rendered = [], {}
    for kdir in kustomizations():
        objects = rendered[kdir] = render(kdir)
        if not objects:
            continue
        validate(kdir, objects)
        for o in objects:
            pod = o.get("spec", {}).get("template", {}).get("spec", {})
            if any(c["name"] == "fencekeeper" for c in pod.get("initContainers", [])):
                s = check_sidecar_pod(kdir, o, image, root)
                if s:
                    sidecars.append(s)
    check(sidecars, "some overlay deploys the sidecar")
    zk = rendered.get("k8s/overlays/dev-zookeeper")
    if check(bool(zk), "k8s/overlays/dev-zookeeper renders a ZooKeeper ensemble"):
        check_zookeeper("k8s/overlays/dev-zookeeper", zk, sidecars)
    # The image itself is built and run by tests/e2e/pods.sh (podman), with these manifests.
    if failures:
        print(f"{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
        return 1
    print("every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
