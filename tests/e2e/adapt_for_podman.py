#!/usr/bin/python3
"""Turns the rendered k8s/ overlays into Pods that podman 4.3's `kube play` can run.

Only what podman cannot do is changed; each change is in ADAPTATIONS, printed by pods.sh.
Everything else (images, commands, args, env, security contexts, mounts) is played as rendered.

usage: adapt_for_podman.py PLAN.json OUTDIR RENDERED.yaml...
PLAN.json (written by pods.sh): {"address_prefix": "A.B.C." (the test network's /24),
"app_image": "...", "volumes_dir": "/path", "observe_dir": "/path"}. Writes OUTDIR/<pod>.yaml for each pod; OUTDIR/pods.txt
("POD IP" in start order); OUTDIR/tmpfs.txt ("PATH SIZE GROUP": the memory emptyDirs, which
pods.sh mounts); OUTDIR/adaptations.txt. Makes the other volumes' directories and files itself.
"""
import copy
import json
import os
import re
import sys

import yaml

ADAPTATIONS = [
    "StatefulSet -> one Pod per ordinal (zookeeper-N, hostname zookeeper-N): podman 4.3 has no "
    "StatefulSet; each volumeClaimTemplate becomes the named volume <claim>-<pod>",
    "Deployment replicas -> one Pod each (reconciler-N): kube play would share one emptyDir "
    "volume between the replicas",
    "Services -> hostAliases on every pod (a Service name is the address of its first pod; a "
    "headless Service's <pod>.<service> names each pod): no cluster DNS or kube-proxy here",
    "native sidecar (initContainer with restartPolicy Always) -> the pod's first container: "
    "podman 4.3 runs init containers to completion and refuses their probes",
    "startupProbe gating -> the app's command first waits for `fencectl health --ready`, as the "
    "kubelet would start it only once the sidecar's startupProbe passed",
    "$(VAR) in command/args -> expanded from the container's own env, as the kubelet does (podman "
    "does not); a $(VAR) the container does not define fails the adaptation",
    "Secret volume -> a hostPath directory holding the Secret's keys with its defaultMode, group "
    "fsGroup: podman 4.3 panics on Secret volumes (podman #16636)",
    "emptyDir -> a hostPath directory that pods.sh mounts as the kubelet does: tmpfs of the "
    "sizeLimit for medium Memory, mode 2777, group fsGroup",
    "app image my-app:1.0 -> the test's app image (fencekeeper's image plus /app/reconcile, "
    "which logs one tick a 100 ms with its token to the hostPath /e2e shared by both replicas: "
    "the test's only addition)",
    "containerPorts and probes dropped: podman 4.3 publishes containerPorts on the host (three "
    "ZooKeeper pods would collide on 2181), and its healthchecks need systemd; pods.sh runs "
    "the probes' commands itself (tests/k8s checks them against the binaries)",
    "PodDisruptionBudget, NetworkPolicy, Secret objects: not played (no API server, one network)",
]


def load(paths):
    docs = []
    for p in paths:
        with open(p) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs


def expand_vars(container, pod_name):
    """$(VAR) as the kubelet expands it: from the container's env, literal or metadata.name."""
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name":
            env[e["name"]] = pod_name

    def sub(text):
        def one(m):
            if m.group(1) not in env:
                raise SystemExit(f"adapt: container {container['name']} uses $({m.group(1)}) "
                                 "in its command but does not define it in its env: Kubernetes "
                                 "would pass the text $(" + m.group(1) + ") unexpanded")
            return env[m.group(1)]
        return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, text)

    for key in ("command", "args"):
        if key in container:
            container[key] = [sub(a) for a in container[key]]


def pod(name, template, hostname=None):
    spec = copy.deepcopy(template["spec"])
    if hostname:
        spec["hostname"] = hostname
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(template["metadata"].get("labels", {}))},
            "spec": spec}


def main():
    plan_in, outdir, rendered = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(plan_in) as f:
        plan = json.load(f)
    docs = load(rendered)
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    services = [d for d in docs if d["kind"] == "Service"]
    pods = []
    for d in docs:
        if d["kind"] == "StatefulSet":
            for i in range(d["spec"].get("replicas", 1)):
                name = f"{d['metadata']['name']}-{i}"
                p = pod(name, d["spec"]["template"], hostname=name)
                for claim in d["spec"].get("volumeClaimTemplates", []):
                    p["spec"].setdefault("volumes", []).append(
                        {"name": claim["metadata"]["name"],
                         "persistentVolumeClaim": {"claimName": f"{claim['metadata']['name']}-{name}"}})
                pods.append(p)
        elif d["kind"] == "Deployment":
            for i in range(d["spec"].get("replicas", 1)):
                pods.append(pod(f"{d['metadata']['name']}-{i}", d["spec"]["template"]))

    ips = {p["metadata"]["name"]: plan["address_prefix"] + str(10 + i) for i, p in enumerate(pods)}
    plan["ips"] = ips
    # Every Service name to an address: the first selected pod's (headless ones per pod, too).
    aliases = {}
    for s in services:
        selector = s["spec"].get("selector", {})
        chosen = [p for p in pods if all(p["metadata"]["labels"].get(k) == v
                                         for k, v in selector.items())]
        if chosen:
            aliases.setdefault(plan["ips"][chosen[0]["metadata"]["name"]], []).append(
                s["metadata"]["name"])
        if s["spec"].get("clusterIP") == "None":
            for p in chosen:
                aliases.setdefault(plan["ips"][p["metadata"]["name"]], []).append(
                    f"{p['metadata']['name']}.{s['metadata']['name']}")

    prepare = {"tmpfs": [], "dirs": [], "files": []}
    for p in pods:
        name, spec = p["metadata"]["name"], p["spec"]
        fs_group = spec.get("securityContext", {}).get("fsGroup")
        spec["hostAliases"] = [{"ip": ip, "hostnames": sorted(names)}
                               for ip, names in sorted(aliases.items())]
        init = spec.pop("initContainers", [])
        sidecars = [c for c in init if c.get("restartPolicy") == "Always"]
        if len(sidecars) != len(init):
            raise SystemExit(f"adapt: {name} has an init container that is not a sidecar")
        for c in sidecars:
            c.pop("restartPolicy")
        for c in sidecars + spec["containers"]:
            expand_vars(c, name)
            for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe"):
                c.pop(key, None)
        if sidecars:
            for c in spec["containers"]:
                c["command"] = ["sh", "-c", "until fencectl health --ready >/dev/null 2>&1; "
                                "do sleep 0.2; done; exec \"$@\"", "wait-for-sidecar"] + \
                    c.get("command", []) + c.pop("args", [])
                if c["image"] == "my-app:1.0":
                    c["image"] = plan["app_image"]
                    c.setdefault("volumeMounts", []).append({"name": "e2e", "mountPath": "/e2e"})
            spec.setdefault("volumes", []).append(
                {"name": "e2e", "hostPath": {"path": plan["observe_dir"], "type": "Directory"}})
        spec["containers"] = sidecars + spec["containers"]
        for v in spec.get("volumes", []):
            if "emptyDir" in v:
                path = os.path.join(plan["volumes_dir"], name, v["name"])
                e = v.pop("emptyDir")
                prepare["tmpfs" if e.get("medium") == "Memory" else "dirs"].append(
                    {"path": path, "size": e.get("sizeLimit"), "group": fs_group})
                v["hostPath"] = {"path": path, "type": "Directory"}
            elif "secret" in v:
                sec = secrets[v["secret"]["secretName"]]
                path = os.path.join(plan["volumes_dir"], name, v["name"])
                data = dict(sec.get("stringData", {}))
                for key, text in data.items():
                    prepare["files"].append({"path": os.path.join(path, key), "text": text,
                                             "mode": v["secret"].get("defaultMode", 0o644),
                                             "group": fs_group})
                v.pop("secret")
                v["hostPath"] = {"path": path, "type": "Directory"}
        with open(os.path.join(outdir, name + ".yaml"), "w") as f:
            yaml.safe_dump(p, f, sort_keys=False)

    # What pods.sh does with the host: the pods in start order with their addresses, and the
    # memory emptyDirs to mount. Directories and Secret files are made here.
    with open(os.path.join(outdir, "pods.txt"), "w") as f:
        f.writelines(f"{p['metadata']['name']} {ips[p['metadata']['name']]}\n" for p in pods)
    with open(os.path.join(outdir, "tmpfs.txt"), "w") as f:
        f.writelines(f"{t['path']} {t['size'] or ''} {t['group'] or 0}\n"
                     for t in prepare["tmpfs"])
    for t in prepare["tmpfs"] + prepare["dirs"]:
        os.makedirs(t["path"], exist_ok=True)
        os.chown(t["path"], 0, t["group"] or 0)
        os.chmod(t["path"], 0o2777)
    for s in prepare["files"]:
        os.makedirs(os.path.dirname(s["path"]), exist_ok=True)
        with open(s["path"], "w") as out:
            out.write(s["text"])
        os.chown(s["path"], 0, s["group"] or 0)
        os.chmod(s["path"], s["mode"])
    with open(os.path.join(outdir, "adaptations.txt"), "w") as f:
        f.writelines(f"  - {a}\n" for a in ADAPTATIONS)


if __name__ == "__main__":
    main()
