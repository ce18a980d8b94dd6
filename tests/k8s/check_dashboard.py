#!/usr/bin/env python3
"""k8s/grafana-dashboard.json uses only the metrics the sidecar exports, and shows every one.

The exported metrics are tests/k8s/metric-names.txt (name, type, labels). Every metric an
expression names must be there (a histogram's by its _bucket, _sum or _count series), every
label it groups or filters by must be one of that metric's (or a scraper's: pod, instance, job;
le for a histogram's buckets), and every listed metric must appear in some panel.

usage: check_dashboard.py SOURCE_DIR [SCRAPE]    SCRAPE: a /metrics answer to check the list by
       check_dashboard.py --regenerate SCRAPE    rewrites the list from a /metrics answer
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, "metric-names.txt")
SCRAPER_LABELS = {"pod", "instance", "job", "namespace"}
HISTOGRAM_SERIES = ("_bucket", "_sum", "_count")


def read_list(path=LIST):
    metrics = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, kind, *labels = line.split()
                metrics[name] = (kind, set(labels[0].split(",")) if labels else set())
    return metrics


def parse_scrape(path):
    """Prometheus text format: `# TYPE name kind` and the samples' label names."""
    metrics = {}
    with open(path) as f:
        text = f.read()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)", text, re.M):
        metrics[name] = (kind, set())
    for series, labels in re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", text, re.M):
        family = series
        for suffix in HISTOGRAM_SERIES:
            if series.endswith(suffix) and series[: -len(suffix)] in metrics:
                family = series[: -len(suffix)]
        if family in metrics:
            names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', labels))
            if metrics[family][0] == "histogram":
                names.discard("le")
            metrics[family][1].update(names)
    return metrics


def regenerate(scrape):
    metrics = parse_scrape(scrape)
    with open(LIST) as f:
        header = [l for l in f if l.startswith("#")]
    with open(LIST, "w") as f:
        f.writelines(header)
        for name in sorted(metrics):
            kind, labels = metrics[name]
            f.write(" ".join([name, kind] + ([",".join(sorted(labels))] if labels else [])) + "\n")
    print(f"wrote {len(metrics)} metrics to {LIST}")


def expressions(node):
    if isinstance(node, dict):
        if isinstance(node.get("expr"), str):
            yield node["expr"]
        for v in node.values():
            yield from expressions(v)
    elif isinstance(node, list):
        for v in node:
            yield from expressions(v)


def family(series, metrics):
    if series in metrics:
        return series
    for suffix in HISTOGRAM_SERIES:
        base = series[: -len(suffix)]
        if series.endswith(suffix) and metrics.get(base, ("",))[0] == "histogram":
            return base
    return None


def main(argv):
    if argv[1:2] == ["--regenerate"]:
        regenerate(argv[2])
        return 0
    source = argv[1]
    metrics = read_list()
    failures = []
    if len(argv) > 2:  # the list against a real scrape
        scraped = parse_scrape(argv[2])
        for name, (kind, labels) in metrics.items():
            got = scraped.get(name)
            if got is None:
                failures.append(f"{name} is listed but the sidecar's /metrics has no such metric")
            elif got[0] != kind or not labels <= got[1]:
                failures.append(f"{name}: listed as {kind} {sorted(labels)}, exported as "
                                f"{got[0]} {sorted(got[1])}")
        for name in sorted(set(scraped) - set(metrics)):
            failures.append(f"{name} is exported but not listed: --regenerate the list")
    with open(os.path.join(source, "k8s", "grafana-dashboard.json")) as f:
        dashboard = json.load(f)
    used = set()
    exprs = list(expressions(dashboard))
    for expr in exprs:
        names = set(re.findall(r"\bfencekeeper_[a-z0-9_]+", expr))
        families = set()
        for series in names:
            fam = family(series, metrics)
            if fam is None:
                failures.append(f"`{series}` is not a metric the sidecar exports (in: {expr})")
            else:
                families.add(fam)
        used |= families
        grouped = set()
        for clause in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
            grouped |= {l.strip() for l in clause.split(",") if l.strip()}
        for selector in re.findall(r"\{([^}]*)\}", expr):
            grouped |= set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", selector))
        allowed = set(SCRAPER_LABELS)
        for fam in families:
            allowed |= metrics[fam][1] | ({"le"} if metrics[fam][0] == "histogram" else set())
        for label in sorted(grouped - allowed):
            failures.append(f"label `{label}` is not one of {sorted(families)}'s (in: {expr})")
    for name in sorted(set(metrics) - used):
        failures.append(f"{name} is exported but no panel shows it")
    print(f"{len(exprs)} expressions, {len(used)} of {len(metrics)} exported metrics shown")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
