#!/usr/bin/env python3
"""Prints the `deployments` runs of bench.sh side by side: for each deployment (one SQLite
node, one PostgreSQL node, a cluster of one, three nodes) its runs' medians of rounds/s,
result p50 and p99, and CPU per round by process group (the servers, PostgreSQL, Redis, the
generator), each group's cores over the hold divided by the rounds a second; then each
deployment's servers-and-services CPU per round against one PostgreSQL node's.

usage: deployments.py OUT_DIR RUNS
"""

import json
import statistics
import sys
from pathlib import Path

DEPLOYMENTS = [
    ("sqlite", "one SQLite node"),
    ("postgres", "one PostgreSQL node"),
    ("cluster1", "one node in cluster mode"),
    ("nodes3", "three nodes"),
]


def group(name):
    """The process group a watched process's name belongs to."""
    if name.startswith("node ") or name == "server":
        return "servers"
    if name.startswith("postgres"):
        return "PostgreSQL"
    if name.startswith("redis"):
        return "Redis"
    return "generator"


def figures(report):
    rounds = report["rounds_per_s"]
    per_round = {}
    for cores in report.get("cluster", {}).get("cores", []):
        g = group(cores["name"])
        per_round[g] = per_round.get(g, 0.0) + cores["cores"] / rounds * 1e6
    latency = report["result_latency_ms"]
    return {
        "rounds/s": rounds,
        "p50 ms": latency["p50"],
        "p99 ms": latency["p99"],
        "errors": report["errors"],
        **{f"{g} µs": v for g, v in per_round.items()},
    }


def main():
    out, runs = Path(sys.argv[1]), int(sys.argv[2])
    columns = ["rounds/s", "p50 ms", "p99 ms", "errors", "servers µs",
               "PostgreSQL µs", "Redis µs", "generator µs", "total µs"]
    print("| deployment | runs | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 2) + "|")
    totals = {}
    for key, title in DEPLOYMENTS:
        runs_seen = []
        for i in range(1, runs + 1):
            path = out / f"deploy-{key}-{i}.json"
            if path.exists() and path.stat().st_size > 0:
                f = figures(json.loads(path.read_text()))
                f["total µs"] = sum(v for k, v in f.items()
                                    if k.endswith("µs") and not k.startswith("generator"))
                runs_seen.append(f)
        if not runs_seen:
            print(f"| {title} | 0 |" + " |" * len(columns))
            continue
        medians = {c: statistics.median(r.get(c, 0.0) for r in runs_seen) for c in columns}
        totals[key] = medians["total µs"]
        cells = " | ".join(f"{medians[c]:.1f}" for c in columns)
        print(f"| {title} | {len(runs_seen)} | {cells} |")
    if "postgres" in totals:
        print()
        print("CPU per round (servers, PostgreSQL, Redis) against one PostgreSQL node's:")
        for key, title in DEPLOYMENTS:
            if key in totals:
                print(f"- {title}: {totals[key] / totals['postgres']:.2f}×")


if __name__ == "__main__":
    main()
