#!/usr/bin/env python3
"""Assembles the peer harnesses' JSON lines into one Google Benchmark JSON file.

usage: assemble.py --out FILE [--divisor N] [--commit C] [--peers netty,asio]
                   [--workloads W1,...,W6] LINES.jsonl [LINES.jsonl ...]

Each input holds what netty_inproc or asio_inproc printed: one context line
({"peer": P, "context": {...}}) and one line per workload ({"peer": P, "workload": W,
"ops": N, "median_s": S, "real_time_ns": T, ...counters}). The output has a "context"
object and a "benchmarks" array with one entry per workload and peer, named
peer/<peer>/<workload>:
  real_time        nanoseconds per operation of the median round (time_unit "ns")
  iterations       1 (one median round stands for the workload)
  items_per_second operations per second of the median round
  counters         tasks_per_s, ns_per_hop, hops_per_s, idle_cpu_ms_per_s, ops_per_s,
                   schedules_per_s, cancels_per_s, ... as fields of the entry
ns_per_hop is in nanoseconds here (not Google Benchmark's inverted-rate seconds).

Exit status 1 when a peer lacks one of the workloads it was expected to run, or when W5
does not show that every cancel succeeded and no cancelled timer ran; the file is
written anyway, for inspection. 2 on unreadable input.
"""
import argparse
import datetime
import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from merge import machine  # noqa: E402  (tools/bench/merge.py)

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6")
TITLES = {
    "W1": "one producer, counting no-op tasks",
    "W2": "two producers, one executor",
    "W3": "ping-pong between two executors",
    "W4": "promise create + listen + complete on the loop",
    "W5": "schedule then cancel timers on the loop",
    "W6": "self-resubmitting task on the loop",
}
# Fields of a harness line that are bookkeeping, not counters.
BOOKKEEPING = {"peer", "workload", "ops", "median_s", "real_time_ns", "rounds_s", "stand_in"}


def entry(line):
    peer, workload = line["peer"], line["workload"]
    name = f"peer/{peer}/{workload}"
    ns = float(line["real_time_ns"])
    label = f"{workload} {TITLES.get(workload, '')}, {line['ops']} ops, median of 5 rounds"
    if "stand_in" in line:
        label += f"; stand-in: {line['stand_in']}"
    e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
         "repetition_index": 0, "threads": 1, "iterations": 1,
         "real_time": ns, "cpu_time": ns, "time_unit": "ns",
         "items_per_second": int(line["ops"]) / float(line["median_s"]),
         "label": label, "ops": int(line["ops"]), "median_round_s": float(line["median_s"])}
    for k, v in line.items():
        if k in BOOKKEEPING:
            continue
        if isinstance(v, bool):
            e[k] = 1.0 if v else 0.0
        elif isinstance(v, (int, float)):
            e[k] = v
    return e


def w5_problems(line):
    out = []
    if line.get("all_cancelled") is not True:
        out.append("all_cancelled is not true")
    if line.get("cancels_succeeded") != line.get("cancel_calls"):
        out.append(f"{line.get('cancels_succeeded')} of {line.get('cancel_calls')} "
                   "cancels succeeded")
    if line.get("cancelled_timers_ran") != 0:
        out.append(f"{line.get('cancelled_timers_ran')} cancelled timers ran")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--divisor", type=int, default=1)
    ap.add_argument("--commit", default="")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="the workloads every peer must have reported")
    ap.add_argument("--peers", default="netty,asio",
                    help="the peers that must have reported")
    ap.add_argument("inputs", nargs="+")
    args = ap.parse_args()

    peers, entries, problems = {}, [], []
    seen = {}
    for path in args.inputs:
        try:
            with open(path) as f:
                lines = [json.loads(l) for l in f if l.strip().startswith("{")]
        except (OSError, ValueError) as e:
            print(f"assemble: cannot read {path}: {e}", file=sys.stderr)
            return 2
        for line in lines:
            peer = line.get("peer")
            if not peer:
                continue
            if "context" in line:
                peers[peer] = line["context"]
                seen.setdefault(peer, set())
                continue
            if "workload" not in line:
                continue
            seen.setdefault(peer, set()).add(line["workload"])
            entries.append(entry(line))
            if line["workload"] == "W5":
                problems += [f"{peer} W5: {p}" for p in w5_problems(line)]
    expected = [w for w in args.workloads.split(",") if w]
    for peer in [p for p in args.peers.split(",") if p]:
        seen.setdefault(peer, set())
    for peer in sorted(seen):
        missing = [w for w in expected if w not in seen[peer]]
        if missing:
            problems.append(f"{peer}: no result for {', '.join(missing)}")
    if not entries:
        problems.append("no workload results at all")

    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host_name": socket.gethostname(),
        "executable": "tools/bench/peers/run.sh",
        "num_cpus": os.cpu_count(),
        "library_build_type": "release",
        "gyre_machine": machine(),
        "gyre_peers": {"divisor": args.divisor, **peers},
    }
    if args.commit:
        context["gyre_commit"] = args.commit
    if args.divisor > 1:
        context["gyre_peers_note"] = (f"sizes divided by {args.divisor}: a smoke run, "
                                      "not meaningful figures")
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": entries}, f, indent=1)
    print(f"assemble: {len(entries)} entries -> {args.out}", file=sys.stderr)
    for p in problems:
        print(f"assemble: FAILED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
