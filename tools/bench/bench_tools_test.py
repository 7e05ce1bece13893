#!/usr/bin/env python3
"""Tests of merge.py, gate.py, report.py, net.py and peers/assemble.py on generated input."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TMP = os.environ.get("TEST_TMPDIR") or tempfile.mkdtemp()


def gb_file(path, entries, date="2026-01-01T00:00:00", commit="c0"):
    """entries: {name: [real_time_ns per repetition]} plus optional counters."""
    benchmarks = []
    for name, reps in entries.items():
        for i, t in enumerate(reps):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "repetitions": len(reps), "repetition_index": i,
                               "iterations": 1000, "real_time": t, "cpu_time": t,
                               "time_unit": "ns", "items_per_second": 1e9 / t,
                               "allocs_per_op": 0.0})
    with open(path, "w") as f:
        json.dump({"context": {"date": date, "gyre_date": date, "gyre_commit": commit,
                               "num_cpus": 2}, "benchmarks": benchmarks}, f)
    return path


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(HERE, script), *args],
                          capture_output=True, text=True)


def noisy(center, n, rng, spread=0.02):
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


class GateTest(unittest.TestCase):
    def setUp(self):
        self.rng = random.Random(7)
        self.dir = tempfile.mkdtemp(dir=TMP)

    def test_significant_slowdown_fails(self):
        base = gb_file(os.path.join(self.dir, "b.json"), {"BM_A": noisy(100, 5, self.rng)})
        cur = gb_file(os.path.join(self.dir, "c.json"), {"BM_A": noisy(130, 5, self.rng)})
        r = run("gate.py", base, cur, "--threshold=10%", "--no-table")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("REGRESSED", r.stdout)

    def test_noise_within_threshold_passes(self):
        base = gb_file(os.path.join(self.dir, "b.json"), {"BM_A": noisy(100, 5, self.rng)})
        cur = gb_file(os.path.join(self.dir, "c.json"), {"BM_A": noisy(104, 5, self.rng)})
        r = run("gate.py", base, cur, "--threshold=10%", "--no-table")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_single_runs_never_fail(self):
        base = gb_file(os.path.join(self.dir, "b.json"), {"BM_A": [100.0]})
        cur = gb_file(os.path.join(self.dir, "c.json"), {"BM_A": [300.0]})
        r = run("gate.py", base, cur, "--no-table")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("untested", r.stdout)

    def test_overlapping_slow_outlier_is_not_significant(self):
        # One slow repetition out of five: the median moves little; no failure.
        base = gb_file(os.path.join(self.dir, "b.json"), {"BM_A": [100, 101, 99, 100, 102]})
        cur = gb_file(os.path.join(self.dir, "c.json"), {"BM_A": [100, 250, 99, 101, 100]})
        r = run("gate.py", base, cur, "--no-table")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_bad_input(self):
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        good = gb_file(os.path.join(self.dir, "g.json"), {"BM_A": [1.0]})
        r = run("gate.py", bad, good)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot read", r.stderr)
        r = run("gate.py", good, good, "--threshold=abc")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("bad --threshold", r.stderr)


class MergeTest(unittest.TestCase):
    def test_merges_and_adds_context(self):
        d = tempfile.mkdtemp(dir=TMP)
        a = gb_file(os.path.join(d, "a_benchmark.json"), {"BM_A": [1.0, 2.0]})
        b = gb_file(os.path.join(d, "b_benchmark.json"), {"BM_B": [3.0]})
        out = os.path.join(d, "run.json")
        r = run("merge.py", out, a, b, "--commit", "abc123", "--date", "2026-02-02T00:00:00")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            data = json.load(f)
        self.assertEqual(len(data["benchmarks"]), 3)
        self.assertEqual(data["context"]["gyre_commit"], "abc123")
        self.assertIn("cpus", data["context"]["gyre_machine"])
        self.assertEqual({x["binary"] for x in data["benchmarks"]}, {"a_benchmark", "b_benchmark"})


W1 = "BM_W1_OneProducer/10000000/iterations:1/manual_time"


class ReportTest(unittest.TestCase):
    def test_report_renders_in_headless_browser(self):
        results = tempfile.mkdtemp(dir=TMP)
        out = tempfile.mkdtemp(dir=TMP)
        for i, (commit, t) in enumerate([("c1", 200.0), ("c2", 150.0), ("c3", 120.0)]):
            path = gb_file(os.path.join(results, f"run{i}.json"),
                           {W1: [t, t * 1.01, t * 0.99],
                            "BM_PromiseCreateListenComplete": [30.0, 31.0, 29.0]},
                           date=f"2026-01-0{i + 1}T00:00:00", commit=commit)
            with open(path) as f:
                data = json.load(f)
            for b in data["benchmarks"]:
                if b["name"] == W1:
                    b["tasks_per_s"] = 1e9 / b["real_time"]
            with open(path, "w") as f:
                json.dump(data, f)
        r = run("report.py", results, out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        index = os.path.join(out, "index.html")
        with open(index) as f:
            page = f.read()
        self.assertIn("c3", page)
        self.assertIn("BM_W1_OneProducer", page)
        pngs = [p for p in os.listdir(out) if p.endswith(".png")]
        self.assertIn("W1.png", pngs)
        self.assertIn("P1.png", pngs)
        with open(os.path.join(out, "W1.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        self.assertIsNotNone(browser, "chromium is not installed (./dev setup installs it)")
        profile = tempfile.mkdtemp(dir=TMP)
        env = dict(os.environ, HOME=profile)
        dom = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             f"--user-data-dir={profile}", "--virtual-time-budget=5000", "--dump-dom",
             "file://" + index],
            capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        total = len(pngs)
        self.assertIn(f'data-images-total="{total}"', dom.stdout, dom.stdout[-2000:])
        self.assertIn(f'data-images-loaded="{total}"', dom.stdout, dom.stdout[-2000:])

    def test_inverted_rate_counter_is_scaled_to_its_unit(self):
        # ns_per_hop is an inverted rate counter: Google Benchmark writes seconds per hop.
        results = tempfile.mkdtemp(dir=TMP)
        out = tempfile.mkdtemp(dir=TMP)
        path = gb_file(os.path.join(results, "run.json"),
                       {"BM_PingPong/10000/real_time": [1e7, 1e7, 1e7]})
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            b["ns_per_hop"] = 1.21e-6
        with open(path, "w") as f:
            json.dump(data, f)
        reference = os.path.join(results, "reference.json.txt")
        with open(reference, "w") as f:
            json.dump({"figures": [{"id": "W3", "title": "ping-pong",
                                    "benchmark": "BM_PingPong/10000/real_time",
                                    "metric": "ns_per_hop", "scale": 1e9, "unit": "ns/hop",
                                    "higher_is_better": False, "netty": 12100}]}, f)
        r = run("report.py", results, out, "--reference=" + reference)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "index.html")) as f:
            page = f.read()
        row = page[page.index(">W3<"):]
        row = row[:row.index("</tr>")]
        self.assertIn("1.21k", row)
        self.assertIn("(10.00x)", row)  # Netty's 12,100 ns against 1,210 ns

    def test_empty_results_dir_is_an_error(self):
        r = run("report.py", tempfile.mkdtemp(dir=TMP), tempfile.mkdtemp(dir=TMP))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no run files", r.stderr)


def write_script(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!" + sys.executable + "\n" + text)
    os.chmod(path, 0o755)
    return path


# Both stand-ins below append "<role> <cpus they may use>" to $GYRE_FAKE_AFFINITY_LOG
# when it is set.
LOG_AFFINITY = """
import os
def log_affinity(role):
    log = os.environ.get("GYRE_FAKE_AFFINITY_LOG")
    if log:
        with open(log, "a") as f:
            f.write(role + " " + ",".join(map(str, sorted(os.sched_getaffinity(0)))) + "\\n")
"""

# A stand-in echo server: --port=N, prints the "listening on" line, echoes every byte.
FAKE_ECHO_SERVER = LOG_AFFINITY + """
import socket, sys, threading
log_affinity("server")
port = int(next(a for a in sys.argv if a.startswith("--port=")).split("=", 1)[1])
srv = socket.create_server(("127.0.0.1", port))
print(f"listening on 127.0.0.1:{srv.getsockname()[1]}", flush=True)
def serve(c):
    with c:
        while True:
            b = c.recv(65536)
            if not b:
                return
            c.sendall(b)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# A stand-in for //benchmarks/load:echo_load: one echo of --size bytes, then a JSON line.
FAKE_ECHO_LOAD = LOG_AFFINITY + """
import json, socket, sys
log_affinity("client")
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
size = int(args["size"])
with socket.create_connection((args["host"], int(args["port"])), timeout=5) as s:
    s.sendall(b"x" * size)
    got = 0
    while got < size:
        got += len(s.recv(65536))
print(json.dumps({"msgs_per_sec": 1000.0, "messages": 1, "p50_us": 1.0, "p99_us": 2.0}))
"""


class NetPeersTest(unittest.TestCase):
    def test_peer_servers_not_built_are_skipped_with_a_message(self):
        d = tempfile.mkdtemp(dir=TMP)
        out = os.path.join(d, "net.json")
        r = run("net.py", "--out", out, "--filter", "net/echo/", "--repetitions", "1",
                "--bazel-bin", os.path.join(d, "no-bazel-bin"),
                "--peers-build", os.path.join(d, "no-peers-build"))
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("netty/64", "netty/4096", "asio/64", "asio/4096"):
            self.assertIn(f"net: skipped net/echo/{name}: peer server not built", r.stderr)
        self.assertIn("net: skipped net/echo/gyre/64: server or load client not built", r.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["benchmarks"], [])

    def run_echo_with_peers_only(self, repetitions, *extra):
        """net.py on the echo workload with only the netty and asio servers built (fakes)."""
        d = tempfile.mkdtemp(dir=TMP)
        bazel_bin = os.path.join(d, "bazel-bin")
        peers = os.path.join(d, "peers-build")
        write_script(os.path.join(bazel_bin, "benchmarks/load/echo_load"), FAKE_ECHO_LOAD)
        for label in ("netty", "asio"):
            write_script(os.path.join(peers, f"{label}_echo_server"), FAKE_ECHO_SERVER)
        out = os.path.join(d, "net.json")
        r = run("net.py", "--out", out, "--filter", "net/echo/", "--repetitions",
                str(repetitions), "--duration", "1", "--bazel-bin", bazel_bin,
                "--peers-build", peers, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.last_context = json.load(f)
        return r, self.last_context["benchmarks"]

    def test_peer_servers_run_beside_the_others_when_built(self):
        r, benchmarks = self.run_echo_with_peers_only(repetitions=1)
        names = [b["name"] for b in benchmarks]
        self.assertEqual(names, ["net/echo/netty/64", "net/echo/asio/64",
                                 "net/echo/netty/4096", "net/echo/asio/4096"])
        self.assertIn("net: skipped net/echo/raw_epoll/64: server or load client not built",
                      r.stderr)

    def test_servers_of_a_workload_take_turns_and_report_their_cpu(self):
        _, benchmarks = self.run_echo_with_peers_only(repetitions=2)
        self.assertEqual([(b["name"], b["repetition_index"]) for b in benchmarks],
                         [("net/echo/netty/64", 0), ("net/echo/asio/64", 0),
                          ("net/echo/netty/64", 1), ("net/echo/asio/64", 1),
                          ("net/echo/netty/4096", 0), ("net/echo/asio/4096", 0),
                          ("net/echo/netty/4096", 1), ("net/echo/asio/4096", 1)])
        for b in benchmarks:
            self.assertGreaterEqual(b["cpu_us_per_op"], 0.0, b)

    def test_pin_puts_server_and_client_on_two_cpus(self):
        cpus = sorted(os.sched_getaffinity(0))
        log = os.path.join(tempfile.mkdtemp(dir=TMP), "affinity.log")
        os.environ["GYRE_FAKE_AFFINITY_LOG"] = log
        try:
            if len(cpus) < 2:
                r = run("net.py", "--out", log + ".json", "--pin")
                self.assertNotEqual(r.returncode, 0)
                self.assertIn("--pin needs two CPUs", r.stderr)
                return
            self.run_echo_with_peers_only(1, "--pin")
        finally:
            del os.environ["GYRE_FAKE_AFFINITY_LOG"]
        with open(log) as f:
            lines = sorted(set(f.read().split("\n")) - {""})
        self.assertEqual(lines, [f"client {cpus[1]}", f"server {cpus[0]}"])
        context = self.last_context["context"]
        self.assertEqual((context["server_cpu"], context["client_cpu"]), (cpus[0], cpus[1]))

    def test_without_pin_nothing_is_bound(self):
        cpus = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        log = os.path.join(tempfile.mkdtemp(dir=TMP), "affinity.log")
        os.environ["GYRE_FAKE_AFFINITY_LOG"] = log
        try:
            self.run_echo_with_peers_only(1)
        finally:
            del os.environ["GYRE_FAKE_AFFINITY_LOG"]
        with open(log) as f:
            lines = sorted(set(f.read().split("\n")) - {""})
        self.assertEqual(lines, [f"client {cpus}", f"server {cpus}"])
        self.assertNotIn("server_cpu", self.last_context["context"])


WRK_OUTPUT = """Running 10s test @ http://127.0.0.1:8080/plaintext
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   410.00us  120.00us   3.00ms   80.00%
  Latency Distribution
     50%  400.00us
     75%  450.00us
     90%  500.00us
     99%    1.20ms
  950000 requests in 10.00s, 120.00MB read
Requests/sec:  95000.00
"""


class ParseWrkTest(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, HERE)
        import net  # pylint: disable=import-outside-toplevel
        self.net = net

    def test_percentiles_of_a_plain_run(self):
        self.assertEqual(self.net.parse_wrk(WRK_OUTPUT), (95000.0, 950000, 400.0, 1200.0))

    def test_a_pipelined_run_reports_no_percentiles(self):
        self.assertEqual(self.net.parse_wrk(WRK_OUTPUT, pipelined=True),
                         (95000.0, 950000, None, None))


def harness_line(peer, workload, **fields):
    line = {"peer": peer, "workload": workload, "ops": 1000, "median_s": 0.001,
            "real_time_ns": 1000.0, "rounds_s": [0.001] * 5, "tasks_per_s": 1e6}
    line.update(fields)
    return json.dumps(line)


class PeersAssembleTest(unittest.TestCase):
    def write_lines(self, d, peer, w5):
        path = os.path.join(d, f"{peer}.jsonl")
        lines = [json.dumps({"peer": peer, "context": {"divisor": 1000}})]
        lines += [harness_line(peer, w) for w in ("W1", "W2", "W3", "W4", "W6")]
        lines.append(harness_line(peer, "W5", **w5))
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def assemble(self, netty_w5, asio_w5):
        d = tempfile.mkdtemp(dir=TMP)
        out = os.path.join(d, "peers.json")
        r = run("peers/assemble.py", "--out", out, "--divisor", "1000",
                self.write_lines(d, "netty", netty_w5), self.write_lines(d, "asio", asio_w5))
        with open(out) as f:
            return r, json.load(f)

    GOOD_W5 = {"cancel_calls": 6000, "cancels_succeeded": 6000, "cancelled_timers_ran": 0,
               "all_cancelled": True, "schedules_per_s": 1e6, "cancels_per_s": 2e6}

    def test_twelve_entries_in_google_benchmark_schema(self):
        r, data = self.assemble(self.GOOD_W5, self.GOOD_W5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("context", data)
        names = [b["name"] for b in data["benchmarks"]]
        self.assertEqual(len(names), 12)
        self.assertIn("peer/netty/W1", names)
        self.assertIn("peer/asio/W6", names)
        w5 = next(b for b in data["benchmarks"] if b["name"] == "peer/asio/W5")
        self.assertEqual((w5["run_type"], w5["time_unit"], w5["iterations"]),
                         ("iteration", "ns", 1))
        self.assertEqual(w5["cancels_per_s"], 2e6)
        self.assertEqual(w5["all_cancelled"], 1.0)

    def test_a_failed_cancel_or_a_timer_that_ran_fails(self):
        bad = dict(self.GOOD_W5, cancels_succeeded=5999, all_cancelled=False)
        r, _ = self.assemble(self.GOOD_W5, bad)
        self.assertEqual(r.returncode, 1)
        self.assertIn("asio W5: 5999 of 6000 cancels succeeded", r.stderr)
        ran = dict(self.GOOD_W5, cancelled_timers_ran=3, all_cancelled=False)
        r, _ = self.assemble(ran, self.GOOD_W5)
        self.assertEqual(r.returncode, 1)
        self.assertIn("netty W5: 3 cancelled timers ran", r.stderr)


if __name__ == "__main__":
    unittest.main()
