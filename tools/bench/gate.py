#!/usr/bin/env python3
"""Regression gate over two Google Benchmark JSON files.

usage: gate.py BASELINE.json CURRENT.json [--threshold=10%] [--alpha=0.05]
               [--filter=REGEX] [--no-table]

Prints Google Benchmark's compare.py table (when compare.py and its scipy are
available), then decides: a benchmark REGRESSED when the median of its repetitions got
slower by more than the threshold AND a one-sided Mann-Whitney U test over the
repetitions says the slowdown is significant (p <= alpha). A single noisy run cannot fail
the gate: with fewer than 3 repetitions on either side a benchmark is reported as
"untested" and never fails. Exit status: 0 no regression, 1 regression(s), 2 bad input.

The measure is real_time per iteration (lower is better); network entries written by
./dev bench store time per request/message there, so the same rule applies.
"""
import argparse
import functools
import math
import os
import re
import statistics
import subprocess
import sys

import benchjson

COMPARE_PY = "/usr/share/benchmark/compare.py"
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    try:
        return benchjson.load(path)
    except benchjson.BadBenchmarkFile as e:
        raise SystemExit(f"gate: {e}")


def samples(data, name_filter):
    """run_name -> list of real_time in ns, one per repetition."""
    out = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b.get("name"))
        if name is None or "real_time" not in b:
            continue
        if name_filter and not re.search(name_filter, name):
            continue
        scale = UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
        out.setdefault(name, []).append(float(b["real_time"]) * scale)
    return out


@functools.lru_cache(maxsize=None)
def _count(u, m, n):
    """Number of arrangements of m X's and n Y's whose U statistic (pairs X>Y) is u."""
    if u < 0 or u > m * n:
        return 0
    if m == 0 or n == 0:
        return 1 if u == 0 else 0
    # The largest element is an X (contributes n pairs) or a Y (contributes none).
    return _count(u - n, m - 1, n) + _count(u, m, n - 1)


def u_test_greater(x, y):
    """One-sided exact Mann-Whitney p-value for 'x tends to be greater than y'."""
    m, n = len(x), len(y)
    u = 0.0
    for a in x:
        for b in y:
            u += 1.0 if a > b else (0.5 if a == b else 0.0)
    total = 0
    # P(U >= u) under the null; ties are rounded conservatively down to a whole count.
    start = int(u) if u == int(u) else int(u) + 1
    for k in range(start, m * n + 1):
        total += _count(k, m, n)
    return total / math.comb(m + n, m)


def parse_threshold(text):
    t = text.strip()
    try:
        value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise SystemExit(f"gate: bad --threshold {text!r} (expected e.g. 10% or 0.1)")
    if not 0 <= value < 10:
        raise SystemExit(f"gate: --threshold {text!r} out of range")
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("baseline")
    ap.add_argument("current")
    ap.add_argument("--threshold", default="10%")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--filter", default="")
    ap.add_argument("--no-table", action="store_true")
    args = ap.parse_args()
    threshold = parse_threshold(args.threshold)
    if not 0 < args.alpha < 1:
        raise SystemExit("gate: --alpha must be in (0, 1)")

    base = samples(load(args.baseline), args.filter)
    cur = samples(load(args.current), args.filter)

    if not args.no_table and os.path.exists(COMPARE_PY):
        r = subprocess.run([sys.executable, COMPARE_PY, "-a", "benchmarks", args.baseline,
                            args.current], capture_output=True, text=True)
        if r.returncode == 0:
            print(r.stdout)
        else:
            print(f"gate: compare.py failed ({r.stderr.strip().splitlines()[-1:]}); "
                  "continuing with the gate's own table", file=sys.stderr)

    common = sorted(set(base) & set(cur))
    if not common:
        print("gate: no benchmark appears in both files", file=sys.stderr)
        return 2
    regressions = []
    width = max(len(n) for n in common)
    print(f"{'benchmark':<{width}}  {'base(ns)':>12} {'cur(ns)':>12} {'change':>8} {'p':>7}  verdict")
    for name in common:
        b, c = base[name], cur[name]
        mb, mc = statistics.median(b), statistics.median(c)
        change = (mc - mb) / mb if mb > 0 else 0.0
        if len(b) < 3 or len(c) < 3:
            p, verdict = float("nan"), "untested (needs >= 3 repetitions each)"
        else:
            p = u_test_greater(c, b)
            if change > threshold and p <= args.alpha:
                verdict = "REGRESSED"
                regressions.append(name)
            elif change > threshold:
                verdict = "slower, not significant"
            elif change < -threshold and u_test_greater(b, c) <= args.alpha:
                verdict = "faster"
            else:
                verdict = "same"
        print(f"{name:<{width}}  {mb:>12.1f} {mc:>12.1f} {change:>+8.1%} {p:>7.3f}  {verdict}")
    only_base = sorted(set(base) - set(cur))
    if only_base:
        print(f"gate: {len(only_base)} benchmark(s) missing from the current run: "
              + ", ".join(only_base[:5]) + (" ..." if len(only_base) > 5 else ""))
    if regressions:
        print(f"gate: FAIL: {len(regressions)} regression(s) beyond {threshold:.0%} "
              f"(p <= {args.alpha}): " + ", ".join(regressions))
        return 1
    print(f"gate: ok: no significant regression beyond {threshold:.0%} in {len(common)} benchmarks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
