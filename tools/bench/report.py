#!/usr/bin/env python3
"""HTML report (with PNG charts from gnuplot) of the benchmark history in bench-results/.

usage: report.py RESULTS_DIR OUT_DIR [--reference=reference.json]

Reads every run file in RESULTS_DIR (Google Benchmark JSON, as ./dev bench writes them),
orders the runs by date, and writes OUT_DIR/index.html with: the tracked figures (the
issues' W1..W6, promise, echo and HTTP workloads) over commits, each beside the
reference figures for Netty, asio and raw epoll and the ratios; and a table of every
benchmark of the latest run with its allocations per operation. Charts are PNGs drawn by
gnuplot; without gnuplot the page is still written, with tables only.
"""
import argparse
import glob
import html
import json
import os
import shutil
import statistics
import subprocess
import sys

import benchjson

HERE = os.path.dirname(os.path.abspath(__file__))


def load_runs(results_dir):
    runs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            data = benchjson.load(path)
        except benchjson.BadBenchmarkFile as e:
            print(f"report: skipping: {e}", file=sys.stderr)
            continue
        ctx = data.get("context", {})
        runs.append({
            "path": path,
            "date": ctx.get("gyre_date") or ctx.get("date") or os.path.basename(path),
            # Run files are named DATE_COMMIT.json when the context lacks the commit.
            "commit": ctx.get("gyre_commit") or
                      (os.path.splitext(os.path.basename(path))[0].split("_") + ["?"])[1],
            "benchmarks": data["benchmarks"],
            "context": ctx,
        })
    runs.sort(key=lambda r: r["date"])
    return runs


def metric_value(run, bench_name, metric, scale=1.0):
    """Median over repetitions of `metric` for `bench_name` in `run`, times `scale`, or None.

    `scale` converts a counter to the figure's unit (Google Benchmark's inverted rate
    counters, such as ns_per_hop, are in seconds: scale 1e9 gives nanoseconds)."""
    values = []
    for b in run["benchmarks"]:
        name = b.get("run_name", b.get("name"))
        if name != bench_name or b.get("run_type", "iteration") != "iteration":
            continue
        if b.get("error_occurred"):
            continue
        if metric in b:
            values.append(float(b[metric]) * scale)
    return statistics.median(values) if values else None


def fmt(v, unit=""):
    if v is None:
        return "—"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def speed_ratio(gyre, ref, higher_is_better):
    if gyre is None or ref in (None, 0) or gyre == 0:
        return None
    return gyre / ref if higher_is_better else ref / gyre


def chart(fig, series, out_dir, gnuplot):
    """Writes OUT_DIR/<id>.png: gyre over runs, reference lines. Returns file name or None."""
    points = [(i, label, v) for i, (label, v) in enumerate(series) if v is not None]
    if not gnuplot or not points:
        return None
    dat = os.path.join(out_dir, f"{fig['id']}.dat")
    with open(dat, "w") as f:
        for i, label, v in points:
            f.write(f'{i} "{label}" {v}\n')
    png = f"{fig['id']}.png"
    refs = []
    for key, title, color in (("netty", "Netty", "#d95f02"), ("asio", "asio", "#7570b3"),
                              ("raw_epoll", "raw epoll", "#666666")):
        if fig.get(key) is not None:
            refs.append(f'{fig[key]} title "{title}" with lines dt 2 lw 2 lc rgb "{color}"')
    plot = [f'"{dat}" using 1:3:xtic(2) title "gyre" with linespoints lw 2 pt 7 lc rgb "#1b9e77"']
    plot += refs
    script = "\n".join([
        'set terminal pngcairo size 640,320 font "sans,9"',
        f'set output "{os.path.join(out_dir, png)}"',
        f'set title "{fig["title"]}"',
        f'set ylabel "{fig["unit"]}"',
        "set yrange [0:*]",
        "set xtics rotate by -30",
        "set key outside right",
        "set grid ytics",
        f"set xrange [-0.5:{max(len(series) - 0.5, 0.5)}]",
        "plot " + ", ".join(plot),
    ])
    r = subprocess.run([gnuplot], input=script, text=True, capture_output=True)
    if r.returncode != 0 or not os.path.exists(os.path.join(out_dir, png)):
        print(f"report: gnuplot failed for {fig['id']}: {r.stderr.strip()}", file=sys.stderr)
        return None
    os.remove(dat)
    return png


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--reference", default=os.path.join(HERE, "reference.json"))
    args = ap.parse_args()

    runs = load_runs(args.results_dir)
    if not runs:
        print(f"report: no run files in {args.results_dir}; run ./dev bench first", file=sys.stderr)
        return 1
    with open(args.reference) as f:
        figures = json.load(f)["figures"]
    os.makedirs(args.out_dir, exist_ok=True)
    gnuplot = shutil.which("gnuplot")
    latest = runs[-1]

    rows, images = [], []
    for fig in figures:
        scale = float(fig.get("scale", 1.0))
        series = [(f"{r['commit']}", metric_value(r, fig["benchmark"], fig["metric"], scale))
                  for r in runs]
        png = chart(fig, series, args.out_dir, gnuplot)
        if png:
            images.append(png)
        g = series[-1][1]
        raw = None
        if fig.get("raw_benchmark"):
            raw = metric_value(latest, fig["raw_benchmark"], fig["metric"], scale)
        hib = fig["higher_is_better"]
        cells = [fig["id"], fig["title"], fmt(g), fig["unit"]]
        for key in ("netty", "asio", "raw_epoll"):
            ref = fig.get(key)
            r = speed_ratio(g, ref, hib)
            cells.append(f"{fmt(ref)}" + (f" <b>({r:.2f}x)</b>" if r else ""))
        r = speed_ratio(g, raw, hib)
        cells.append(f"{fmt(raw)}" + (f" <b>({r:.2f}x)</b>" if r else ""))
        rows.append(cells)

    all_rows = []
    for b in latest["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("repetition_index", 0) != 0:
            continue
        all_rows.append([b.get("run_name", b.get("name")), b.get("binary", ""),
                         f"{b.get('real_time', 0):.4g} {b.get('time_unit', 'ns')}",
                         fmt(b.get("items_per_second")),
                         "—" if "allocs_per_op" not in b else f"{b['allocs_per_op']:.3g}"])

    ctx = latest["context"]
    mach = ctx.get("gyre_machine", {})
    esc = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>gyre benchmarks</title>",
           "<style>body{font:14px sans-serif;margin:2em;max-width:1200px}"
           "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
           "text-align:right}td:first-child,td:nth-child(2){text-align:left}"
           "img{margin:4px;border:1px solid #eee}</style></head><body>",
           "<h1>gyre benchmarks</h1>",
           f"<p>{len(runs)} run(s); latest: commit <code>{esc(str(latest['commit']))}</code> at "
           f"{esc(str(latest['date']))} on {esc(str(mach.get('cpu_model', '?')))} "
           f"({esc(str(mach.get('cpus', '?')))} CPUs, load {esc(' '.join(mach.get('loadavg', [])))}).</p>",
           "<p>Ratios are gyre's speed relative to the reference (above 1 is faster; for "
           "latency figures the inverse ratio). Reference figures come from the issues and were "
           "measured on this machine kind, not in this run, except raw epoll (this run) where "
           "present.</p>",
           "<h2>Tracked figures</h2><table><tr><th>id</th><th>workload</th><th>gyre</th>"
           "<th>unit</th><th>Netty</th><th>asio</th><th>raw epoll (issue)</th>"
           "<th>raw epoll (this run)</th></tr>"]
    for cells in rows:
        out.append("<tr>" + "".join(f"<td>{c if '<b>' in c else esc(c)}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    if images:
        out.append("<h2>History</h2><div>")
        out += [f"<img src='{esc(p)}' alt='{esc(p)}'>" for p in images]
        out.append("</div>")
    else:
        out.append("<p>(no charts: gnuplot not installed or no data)</p>")
    out.append("<h2>Every benchmark, latest run</h2><table><tr><th>benchmark</th><th>binary</th>"
               "<th>time/iter</th><th>items/s</th><th>allocs/op</th></tr>")
    for cells in all_rows:
        out.append("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    # Lets a headless browser confirm that the charts decoded: counts images with pixels.
    out.append("<script>window.addEventListener('load',function(){var n=0;"
               "document.querySelectorAll('img').forEach(function(i){if(i.naturalWidth>0)n++;});"
               "document.body.setAttribute('data-images-loaded',String(n));"
               "document.body.setAttribute('data-images-total',"
               "String(document.querySelectorAll('img').length));});</script>")
    out.append("</body></html>")
    index = os.path.join(args.out_dir, "index.html")
    with open(index, "w") as f:
        f.write("\n".join(out))
    print(f"report: {index} ({len(runs)} runs, {len(images)} charts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
