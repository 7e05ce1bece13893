#!/usr/bin/env python3
"""Merges Google Benchmark JSON files into one run file for bench-results/.

usage: merge.py OUT.json --commit C --date D IN.json [IN.json ...]

The output keeps Google Benchmark's schema (a "context" object and a "benchmarks"
array), so compare.py reads it directly. Each entry gains a "binary" field naming the
file it came from; the context gains the commit, the date and the machine's description.
"""
import argparse
import json
import os
import platform
import sys

import benchjson


def machine():
    info = {"kernel": platform.release(), "machine": platform.machine()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    info["cpus"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            info["mem_total"] = f.readline().split(":", 1)[1].strip()
    except (OSError, IndexError):
        pass
    try:
        info["loadavg"] = open("/proc/loadavg").read().split()[:3]
    except OSError:
        pass
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--date", required=True)
    args = ap.parse_args()

    context = None
    benchmarks = []
    for path in args.inputs:
        if os.path.getsize(path) == 0:
            continue  # a binary whose benchmarks the filter excluded writes nothing
        try:
            data = benchjson.load(path)
        except benchjson.BadBenchmarkFile as e:
            print(f"merge: skipping: {e}", file=sys.stderr)
            continue
        if context is None and "context" in data:
            context = dict(data["context"])
        binary = os.path.splitext(os.path.basename(path))[0]
        for b in data["benchmarks"]:
            b = dict(b)
            b.setdefault("binary", binary)
            benchmarks.append(b)
    if not benchmarks:
        print("merge: no benchmark results to merge", file=sys.stderr)
        return 1
    context = context or {}
    context["gyre_commit"] = args.commit
    context["gyre_date"] = args.date
    context["gyre_machine"] = machine()
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": benchmarks}, f, indent=1)
    print(f"merge: {len(benchmarks)} entries -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
