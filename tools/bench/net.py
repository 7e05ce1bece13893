#!/usr/bin/env python3
"""Network benchmarks for ./dev bench: TCP echo and HTTP, gyre beside a raw epoll server.

usage: net.py --out FILE [--repetitions N] [--duration SECONDS] [--filter REGEX]
              [--bazel-bin DIR] [--peers-build DIR] [--pin]

Each workload starts a server binary on a free 127.0.0.1 port, waits until it accepts,
drives it with a load client, and stops it. Results are written in Google Benchmark's
JSON schema, one entry per repetition, so compare.py and gate.py treat them like any
other benchmark:
  name            net/echo/<server>/<size>   or   net/http/<server>/p<pipeline depth>
  real_time       nanoseconds per message or request (1e9 / rate; lower is better)
  items_per_second  messages or requests per second
  p50_us, p99_us  round-trip latency percentiles in microseconds (when reported)

  cpu_us_per_op   the server process's CPU time (user + system, from /proc/PID/stat)
                  per message or request: steadier than the rate when the load client
                  shares the machine

Echo load comes from //benchmarks/load:echo_load (64 connections, one outstanding message
each); HTTP load from wrk (-t1 -c64, and 16-deep pipelining through a Lua script). A
workload whose binaries are not built is skipped with a message, never silently.

The servers of one workload take turns: repetition 1 of each, then repetition 2 of each,
and so on, so that a change in the machine's load during the run (these machines are
shared) falls on all of them alike rather than on whichever ran last.

With --pin the server runs on one CPU and the load client on another (the first two CPUs
this process may use), so that the scheduler never puts both on the same core or moves
them between runs; the run's JSON context records the CPUs. A peer server on the JVM then
shares its one CPU with its compiler and collector threads.

The echo workload also runs the peer servers, net/echo/netty/<size> (Netty 4.1, NIO, one
worker loop) and net/echo/asio/<size> (Boost.Asio, one thread), when
tools/bench/peers/build.sh has built them into --peers-build (default
bench-results/peers-build); otherwise they are skipped with a message saying so.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PIPELINE_LUA = """
local depth = tonumber(os.getenv("GYRE_WRK_PIPELINE") or "16")
init = function(args)
  local r = {}
  for i = 1, depth do r[i] = wrk.format(nil, "/plaintext") end
  req = table.concat(r)
end
request = function() return req end
"""


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout:.0f}s")


def on_cpu(cpu):
    """A preexec_fn that binds the child to `cpu`; None (no binding) when cpu is None."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def pin_cpus():
    """The (server, client) CPUs for --pin: the first two this process may run on."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit(f"net: --pin needs two CPUs; this process may use only {cpus}")
    return cpus[0], cpus[1]


class Server:
    def __init__(self, argv, cpu=None):
        self.port = free_port()
        self.argv = [a.replace("{port}", str(self.port)) for a in argv]
        self.log = tempfile.TemporaryFile()
        self.proc = None
        self.cpu = cpu

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=self.log,
                                     preexec_fn=on_cpu(self.cpu))
        try:
            wait_listening(self.port, self.proc)
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return False

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def cpu_seconds(self):
        """User + system CPU time of the server process so far; None where unreadable."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None


def entry(name, rep, reps, rate, count, p50_us=None, p99_us=None, cpu_us_per_op=None):
    e = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": reps,
         "repetition_index": rep, "threads": 1, "iterations": int(count),
         "real_time": 1e9 / rate if rate > 0 else float("inf"),
         "cpu_time": 1e9 / rate if rate > 0 else float("inf"),
         "time_unit": "ns", "items_per_second": rate}
    if p50_us is not None:
        e["p50_us"] = p50_us
    if p99_us is not None:
        e["p99_us"] = p99_us
    if cpu_us_per_op is not None:
        e["cpu_us_per_op"] = cpu_us_per_op
    return e


def parse_echo_load(text):
    """The last JSON object line printed by echo_load --json."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            data = json.loads(line)
            rate = next((data[k] for k in ("msgs_per_sec", "msgs_per_s", "messages_per_second",
                                             "rate") if k in data), None)
            if rate is None:
                raise ValueError(f"echo_load JSON has no rate field: {line}")
            p50 = next((data[k] for k in ("p50_us",) if k in data), None)
            p99 = next((data[k] for k in ("p99_us",) if k in data), None)
            count = next((data[k] for k in ("messages", "count", "total") if k in data), 0)
            return float(rate), count, p50, p99
    raise ValueError("echo_load printed no JSON line:\n" + text[-1000:])


UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


def parse_wrk(text, pipelined=False):
    """(rate, requests, p50_us, p99_us) from wrk's output. A pipelined run reports no
    percentiles: under the pipelining script wrk's latency figures do not time each
    request (in one sitting of five runs they read 0 us for three and up to 4 ms for the
    others while the rate held steady)."""
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not m:
        raise ValueError("wrk printed no Requests/sec:\n" + text[-1000:])
    rate = float(m.group(1))
    count = 0
    m = re.search(r"(\d+) requests in", text)
    if m:
        count = int(m.group(1))
    pct = {}
    for p, v, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        pct[p] = float(v) * UNITS_US[unit]
    if pipelined:
        return rate, count, None, None
    return rate, count, pct.get("50"), pct.get("99")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--filter", default="")
    ap.add_argument("--bazel-bin", default="bazel-bin")
    ap.add_argument("--peers-build", default=os.path.join(ROOT, "bench-results", "peers-build"),
                    help="where tools/bench/peers/build.sh put the Netty and asio servers")
    ap.add_argument("--pin", action="store_true",
                    help="run the server on one CPU and the load client on another")
    args = ap.parse_args()
    if args.repetitions < 1 or args.duration < 1:
        raise SystemExit("net: --repetitions and --duration must be positive")
    args.server_cpu, args.client_cpu = pin_cpus() if args.pin else (None, None)
    bb = args.bazel_bin

    def binary(rel, base=bb):
        path = os.path.join(base, rel)
        return path if os.access(path, os.X_OK) else None

    echo_load = binary("benchmarks/load/echo_load")
    servers_echo = [("gyre", binary("examples/echo/echo_server"),
                     ["--port={port}", "--threads=1", "--transport=nio"]),
                    ("raw_epoll", binary("benchmarks/load/raw_epoll_echo"), ["--port={port}"])]
    # The peers' echo servers, from tools/bench/peers/build.sh.
    peer_echo = {label: binary(f"{label}_echo_server", args.peers_build)
                 for label in ("netty", "asio")}
    servers_echo += [(label, server, ["--host=127.0.0.1", "--port={port}"])
                     for label, server in peer_echo.items()]
    servers_http = [("gyre", binary("examples/http/hello_server"),
                     ["--port={port}", "--threads=1", "--transport=nio"]),
                    ("raw_epoll", binary("benchmarks/http/raw_epoll_http"), ["--port={port}"])]
    wrk = shutil.which("wrk")

    results, skipped = [], []
    # One group per workload; its servers take turns, repetition by repetition.
    groups = []
    for size in (64, 4096):
        groups.append(("echo", size, [(f"net/echo/{label}/{size}", server, sargs)
                                      for label, server, sargs in servers_echo]))
    for depth in (1, 16):
        groups.append(("http", depth, [(f"net/http/{label}/p{depth}", server, sargs)
                                       for label, server, sargs in servers_http]))
    for kind, param, members in groups:
        client = echo_load if kind == "echo" else wrk
        runnable = []
        for name, server, sargs in members:
            if args.filter and not re.search(args.filter, name):
                continue
            if server is None or client is None:
                label = name.split("/")[2]
                if kind == "echo" and label in peer_echo and server is None:
                    skipped.append((name, f"peer server not built (tools/bench/peers/build.sh "
                                          f"{args.peers_build})"))
                else:
                    skipped.append((name, "server or load client not built"))
                continue
            runnable.append((name, server, sargs))
        for rep in range(args.repetitions):
            for name, server, sargs in runnable:
                run_one(args, kind, name, server, sargs, param, client, rep, results)
    for name, why in skipped:
        print(f"net: skipped {name}: {why}", file=sys.stderr)
    with open(args.out, "w") as f:
        context = {"gyre_network": True}
        if args.pin:
            context.update(server_cpu=args.server_cpu, client_cpu=args.client_cpu)
        json.dump({"context": context, "benchmarks": results}, f, indent=1)
    return 0


def run_one(args, kind, name, server, sargs, param, client, rep, results):
    """Runs repetition `rep` of one server under its load client; appends its entry."""
    with Server([server] + sargs, args.server_cpu) as s:
        if kind == "echo":
            cmd = [client, "--host=127.0.0.1", f"--port={s.port}", "--connections=64",
                   f"--size={param}", f"--duration={args.duration}s", "--json"]
            env = None
        else:
            cmd = [client, "-t1", "-c64", f"-d{args.duration}s", "--latency"]
            env = dict(os.environ)
            if param > 1:
                lua = os.path.join(tempfile.gettempdir(), "gyre_wrk_pipeline.lua")
                with open(lua, "w") as f:
                    f.write(PIPELINE_LUA)
                cmd += ["-s", lua]
                env["GYRE_WRK_PIPELINE"] = str(param)
            cmd.append(f"http://127.0.0.1:{s.port}/plaintext")
        cpu_before = s.cpu_seconds()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=args.duration + 60, preexec_fn=on_cpu(args.client_cpu))
        cpu_after = s.cpu_seconds()
        if r.returncode != 0:
            raise SystemExit(f"net: {name}: load client failed ({r.returncode}):\n"
                             f"{r.stdout[-1000:]}{r.stderr[-1000:]}\nserver:\n{s.output()}")
        rate, count, p50, p99 = (parse_echo_load(r.stdout) if kind == "echo"
                                 else parse_wrk(r.stdout, pipelined=param > 1))
    cpu = None
    if cpu_before is not None and cpu_after is not None and count:
        cpu = (cpu_after - cpu_before) * 1e6 / count
    p99_text = f", p99 {p99:.0f} us" if p99 is not None else ""
    cpu_text = f", server CPU {cpu:.2f} us/op" if cpu is not None else ""
    print(f"net: {name} [{rep + 1}/{args.repetitions}]: {rate:,.0f}/s{p99_text}"
          f"{cpu_text}", file=sys.stderr)
    results.append(entry(name, rep, args.repetitions, rate, count, p50, p99, cpu))


if __name__ == "__main__":
    sys.exit(main())
