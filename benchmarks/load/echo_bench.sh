#!/usr/bin/env bash
# TCP echo on loopback: the gyre echo server (nio, one I/O thread) against a raw epoll
# echo server, 64 connections with one message outstanding each, 64 B and 4 KiB.
# Prints the median msg/s and the median p99 of --runs runs, and the gyre/raw ratio.
#
#   benchmarks/load/echo_bench.sh [--duration=10s] [--runs=3] [--connections=64]
#
# Builds with --config=bench (opt, frame pointers kept for perf).
set -euo pipefail
cd "$(dirname "$0")/../.."

duration=10s
runs=3
connections=64
warmup=1s
for arg in "$@"; do
  case "$arg" in
    --duration=*) duration="${arg#*=}" ;;
    --runs=*) runs="${arg#*=}" ;;
    --connections=*) connections="${arg#*=}" ;;
    --warmup=*) warmup="${arg#*=}" ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

bazel build --config=bench //examples/echo:echo_server //benchmarks/load:echo_load \
  //benchmarks/load:raw_epoll_echo >&2
bin="$(bazel info --config=bench bazel-bin 2>/dev/null)"

tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts a server (its command in "$@") and sets $port from its "listening on" line.
start_server() {
  "$@" >"$tmp/server.out" 2>&1 &
  server_pid=$!
  port=""
  for _ in $(seq 1 100); do
    port="$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/server.out" | head -1)"
    [[ -n "$port" ]] && return 0
    sleep 0.1
  done
  echo "server did not start: $(cat "$tmp/server.out")" >&2
  exit 1
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

run_server() {  # name, then the server command
  local name="$1"; shift
  start_server "$@"
  for size in 64 4096; do
    for r in $(seq 1 "$runs"); do
      "$bin/benchmarks/load/echo_load" --host=127.0.0.1 --port="$port" \
        --connections="$connections" --size="$size" --duration="$duration" \
        --warmup="$warmup" --json | sed "s/^/$name $size /" >>"$tmp/results"
    done
  done
  stop_server
}

run_server gyre "$bin/examples/echo/echo_server" --host=127.0.0.1 --port=0 --threads=1
run_server raw "$bin/benchmarks/load/raw_epoll_echo" --host=127.0.0.1 --port=0

python3 - "$tmp/results" "$connections" "$duration" "$runs" <<'PY'
import json, statistics, sys
path, conns, duration, runs = sys.argv[1:]
rows = {}
for line in open(path):
    name, size, js = line.split(" ", 2)
    rows.setdefault((name, int(size)), []).append(json.loads(js))
print(f"TCP echo, {conns} connections, median of {runs} x {duration}")
print(f"{'server':8} {'size':>6} {'msg/s':>10} {'p50 us':>8} {'p99 us':>8}   runs (msg/s)")
med = {}
for (name, size), rs in sorted(rows.items()):
    m = statistics.median(r["msgs_per_sec"] for r in rs)
    p50 = statistics.median(r["p50_us"] for r in rs)
    p99 = statistics.median(r["p99_us"] for r in rs)
    med[(name, size)] = (m, p99)
    print(f"{name:8} {size:6} {m:10.0f} {p50:8.1f} {p99:8.1f}   " +
          " ".join(f"{r['msgs_per_sec']:.0f}" for r in rs))
for size in (64, 4096):
    if ("gyre", size) in med and ("raw", size) in med:
        g, r = med[("gyre", size)], med[("raw", size)]
        print(f"{size} B: gyre/raw msg/s {g[0] / r[0]:.3f}, p99 gyre {g[1]:.1f} us vs raw {r[1]:.1f} us")
PY
