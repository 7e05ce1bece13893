// The in-process workloads W1-W6 on Boost.Asio, defined exactly as //benchmarks:inproc
// defines them for gyre, so the figures compare in one sitting. The executor is an
// io_context (concurrency hint 1: one thread runs it) run by one thread with a work
// guard; execute = boost::asio::post.
//
//   W1  one producer thread posts 10,000,000 counting no-ops to the started io_context;
//       from the producer's release to the last task run; tasks/s.
//   W2  as W1, two producers of 5,000,000 each, released together.
//   W3  two io_contexts, each on its own thread; a task on A posts to B, B to A:
//       1,000,000 one-way hops; ns per hop. Also the CPU time an idle io_context's thread
//       uses over 1 s.
//   W4  asio has no promise type. The stand-in, on the loop thread: std::promise<void>,
//       get_future(), set_value(), future.get(), then a count (where a listener would
//       run), 10,000,000 times; ops/s.
//   W5  on the loop thread: a steady_timer per task, expires_after(delay) + async_wait,
//       1,000,000 times with delays 1 ms..10 s from xorshift64* seeded
//       0x9E3779B97F4A7C15, then cancel() of every timer (each must cancel exactly one
//       wait, and every handler must see operation_aborted); schedules/s and cancels/s.
//   W6  on the loop thread: a task that re-posts itself 10,000,000 times; tasks/s.
//
// Each workload runs 1 untimed round and 5 timed ones and prints one JSON line with the
// median round. Exit status 1 when a check fails.
//
//   asio_inproc [--divisor=N] [--workloads=W1,W5] [--idle-ms=1000]
#include <malloc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/version.hpp>
#include <boost/version.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.h"
#include "benchmarks/idle_cpu.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace asio = boost::asio;

constexpr int kTimedRounds = 5;

int64_t g_divisor = 1;
int64_t g_idle_ms = 1000;
bool g_failed = false;

// As //benchmarks:inproc does: keep freed memory mapped between rounds (a JVM's heap
// stays mapped too), so W5's million timers do not measure first-touch page faults.
void WarmHeap() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
}

int64_t Size(int64_t full) { return std::max<int64_t>(1, full / g_divisor); }

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs `round` (returning its seconds) once untimed and kTimedRounds times.
template <typename F>
std::array<double, kTimedRounds> Rounds(F&& round) {
  round();
  std::array<double, kTimedRounds> t{};
  for (double& s : t) s = round();
  return t;
}

template <size_t N>
double Median(std::array<double, N> t) {
  std::sort(t.begin(), t.end());
  return t[N / 2];
}

// An io_context run by its own thread, kept running by a work guard.
class Loop {
 public:
  Loop() : ioc_(1), guard_(asio::make_work_guard(ioc_)), thread_([this] { ioc_.run(); }) {}
  ~Loop() {
    guard_.reset();
    ioc_.stop();
    thread_.join();
  }
  asio::io_context& ioc() { return ioc_; }

 private:
  asio::io_context ioc_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

// Runs `fn` on `loop`'s thread and waits for it. The promise is shared so that it outlives
// a set_value() still returning on the loop thread when the waiter wakes. A round that
// signals its end through a promise of its own runs OnLoop(loop, [] {}) before that promise
// goes, for the same reason.
template <typename F>
void OnLoop(Loop& loop, F&& fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  asio::post(loop.ioc(), [&fn, done] {
    fn();
    done->set_value();
  });
  finished.get();
}

std::string Num(double v) {
  if (!(v == v) || v > 1e300 || v < -1e300) return "null";
  char buf[64];
  if (v == static_cast<double>(static_cast<int64_t>(v)) && v < 1e15 && v > -1e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  }
  return buf;
}

// A field of a JSON line: a number, or a string when `text` is set.
struct Field {
  std::string name;
  double value = 0;
  std::string text;
  bool is_text = false;
  bool is_bool = false;
};

Field Number(std::string name, double v) { return Field{std::move(name), v, "", false, false}; }
Field Text(std::string name, std::string t) {
  return Field{std::move(name), 0, std::move(t), true, false};
}
Field Bool(std::string name, bool b) {
  return Field{std::move(name), b ? 1.0 : 0.0, "", false, true};
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void Report(const char* workload, int64_t ops, const std::array<double, kTimedRounds>& rounds,
            const std::vector<Field>& fields) {
  const double med = Median(rounds);
  std::ostringstream b;
  b << "{\"peer\":\"asio\",\"workload\":" << Quote(workload) << ",\"ops\":" << ops
    << ",\"median_s\":" << Num(med) << ",\"real_time_ns\":" << Num(med * 1e9 / ops)
    << ",\"rounds_s\":[";
  for (size_t i = 0; i < rounds.size(); ++i) b << (i ? "," : "") << Num(rounds[i]);
  b << "]";
  for (const Field& f : fields) {
    b << "," << Quote(f.name) << ":";
    if (f.is_text) {
      b << Quote(f.text);
    } else if (f.is_bool) {
      b << (f.value != 0 ? "true" : "false");
    } else {
      b << Num(f.value);
    }
  }
  b << "}\n";
  std::fputs(b.str().c_str(), stdout);
  std::fflush(stdout);
}

void Fail(const char* workload, const std::string& why) {
  std::fprintf(stderr, "asio_inproc: %s: %s\n", workload, why.c_str());
  g_failed = true;
}

// ---------------------------------------------------------------------------------
// W1 / W2: producers post counting no-ops; release to the last task run.

struct ProducerRound {
  std::atomic<int64_t> ran{0};
  int64_t total = 0;
  Clock::time_point last_ran;
  std::promise<void> done;

  void Count() {
    // Relaxed: only the task that makes the count whole reads it, and it publishes the
    // time through `done`.
    if (ran.fetch_add(1, std::memory_order_relaxed) + 1 == total) {
      last_ran = Clock::now();
      done.set_value();
    }
  }
};

void Producers(const char* workload, int producers) {
  const int64_t each = Size(10'000'000) / producers;
  const int64_t total = each * producers;
  Loop loop;
  OnLoop(loop, [] {});  // started
  auto t = Rounds([&] {
    ProducerRound r;
    r.total = total;
    std::future<void> done = r.done.get_future();
    std::atomic<bool> go{false};
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (int64_t i = 0; i < each; ++i) asio::post(loop.ioc(), [rp = &r] { rp->Count(); });
      });
    }
    while (ready.load() < producers) std::this_thread::yield();
    const Clock::time_point released = Clock::now();
    go.store(true, std::memory_order_release);
    done.get();
    for (auto& th : threads) th.join();
    OnLoop(loop, [] {});  // the last task has returned from set_value()
    return Seconds(released, r.last_ran);
  });
  Report(workload, total, t,
         {Number("tasks_per_s", static_cast<double>(total) / Median(t)),
          Number("producers", producers)});
}

// ---------------------------------------------------------------------------------
// W3: ping-pong between two io_contexts; then the idle CPU of a started one.

struct PingPong {
  Loop* loops[2];
  int64_t left;  // touched by one thread at a time, handed over through the queues
  std::promise<void> done;
};

// Runs on loops[1 - to]; hands the ball to loops[to].
void Hop(PingPong* p, int to) {
  if (--p->left == 0) {
    p->done.set_value();
    return;
  }
  asio::post(p->loops[to]->ioc(), [p, to] { Hop(p, 1 - to); });
}

void W3() {
  const int64_t hops = Size(1'000'000);
  Loop a, b;
  OnLoop(a, [] {});
  OnLoop(b, [] {});
  auto t = Rounds([&] {
    PingPong p{{&a, &b}, hops, {}};
    std::future<void> done = p.done.get_future();
    const Clock::time_point start = Clock::now();
    asio::post(a.ioc(), [pp = &p] { Hop(pp, 1); });
    done.get();
    const Clock::time_point end = Clock::now();
    OnLoop(a, [] {});  // the last hop has returned from set_value()
    OnLoop(b, [] {});
    return Seconds(start, end);
  });
  const double med = Median(t);
  const double idle =
      gyre::bench::IdleCpuMs([&a](auto fn) { OnLoop(a, fn); }, std::chrono::milliseconds(g_idle_ms)) /
      (static_cast<double>(g_idle_ms) / 1e3);
  Report(
      "W3", hops, t,
      {Number("ns_per_hop", med * 1e9 / static_cast<double>(hops)),
       Number("hops_per_s", static_cast<double>(hops) / med), Number("idle_cpu_ms_per_s", idle)});
}

// ---------------------------------------------------------------------------------
// W4: the promise stand-in, on the loop thread.

void W4() {
  const int64_t n = Size(10'000'000);
  Loop loop;
  OnLoop(loop, [] {});
  auto t = Rounds([&] {
    double s = 0;
    int64_t heard = 0;
    OnLoop(loop, [&] {
      const Clock::time_point start = Clock::now();
      for (int64_t i = 0; i < n; ++i) {
        std::promise<void> p;
        std::future<void> f = p.get_future();
        p.set_value();
        f.get();
        ++heard;  // where a listener would count
      }
      s = Seconds(start, Clock::now());
    });
    if (heard != n) Fail("W4", "a completion was not seen");
    return s;
  });
  Report("W4", n, t,
         {Number("ops_per_s", static_cast<double>(n) / Median(t)),
          Text("stand_in",
               "std::promise<void> + std::future: set_value then get "
               "(asio has no promise type)")});
}

// ---------------------------------------------------------------------------------
// W5: timers scheduled then cancelled, on the loop thread.

std::vector<int64_t> W5Delays(int64_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  const uint64_t lo = 1'000'000;                     // 1 ms in ns
  const uint64_t span = 10'000'000'000ull - lo + 1;  // up to 10 s
  std::vector<int64_t> delays(static_cast<size_t>(n));
  for (auto& d : delays) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t r = x * 0x2545F4914F6CDD1Dull;
    d = static_cast<int64_t>(lo + r % span);
  }
  return delays;
}

void W5() {
  const int64_t n = Size(1'000'000);
  const std::vector<int64_t> delays = W5Delays(n);
  Loop loop;
  OnLoop(loop, [] {});
  std::atomic<int64_t> ran{0};      // handlers that saw their timer expire
  std::atomic<int64_t> aborted{0};  // handlers that saw operation_aborted
  std::array<double, kTimedRounds + 1> schedule_s{}, cancel_s{};
  int round_index = 0;
  int64_t cancelled = 0;  // cancel() calls that cancelled exactly one wait
  auto t = Rounds([&] {
    std::vector<asio::steady_timer> timers;
    timers.reserve(static_cast<size_t>(n));
    const int r = round_index++;
    const int64_t settled_before = ran.load() + aborted.load();
    OnLoop(loop, [&] {
      const Clock::time_point t0 = Clock::now();
      for (int64_t i = 0; i < n; ++i) {
        timers.emplace_back(loop.ioc());
        asio::steady_timer& timer = timers.back();
        timer.expires_after(std::chrono::nanoseconds(delays[static_cast<size_t>(i)]));
        timer.async_wait([&ran, &aborted](const boost::system::error_code& ec) {
          if (ec == asio::error::operation_aborted) {
            aborted.fetch_add(1, std::memory_order_relaxed);
          } else {
            ran.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      const Clock::time_point t1 = Clock::now();
      int64_t ok = 0;
      for (auto& timer : timers) ok += timer.cancel() == 1 ? 1 : 0;
      const Clock::time_point t2 = Clock::now();
      cancelled += ok;
      schedule_s[static_cast<size_t>(r)] = Seconds(t0, t1);
      cancel_s[static_cast<size_t>(r)] = Seconds(t1, t2);
    });
    // The cancelled waits' handlers run (with operation_aborted) after the round; wait
    // for all of them before the timers go, outside the timing.
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(30);
    while (ran.load() + aborted.load() - settled_before < n && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    OnLoop(loop, [&] { timers.clear(); });
    return schedule_s[static_cast<size_t>(r)] + cancel_s[static_cast<size_t>(r)];
  });
  // Give a timer that escaped its cancel() the time to become due and run.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  OnLoop(loop, [] {});
  const int64_t calls = n * (kTimedRounds + 1);
  if (cancelled != calls)
    Fail("W5", std::to_string(calls - cancelled) + " cancel() calls cancelled no wait");
  if (ran.load() != 0) Fail("W5", std::to_string(ran.load()) + " cancelled timers ran");
  if (aborted.load() != calls)
    Fail("W5", "not every cancelled wait completed with operation_aborted");
  std::array<double, kTimedRounds> s{}, c{};
  std::copy(schedule_s.begin() + 1, schedule_s.end(), s.begin());
  std::copy(cancel_s.begin() + 1, cancel_s.end(), c.begin());
  Report("W5", n, t,
         {Number("schedules_per_s", static_cast<double>(n) / Median(s)),
          Number("cancels_per_s", static_cast<double>(n) / Median(c)),
          Number("ops_per_s", static_cast<double>(n) / Median(t)),
          Number("cancel_calls", static_cast<double>(calls)),
          Number("cancels_succeeded", static_cast<double>(cancelled)),
          Number("cancelled_timers_ran", static_cast<double>(ran.load())),
          Bool("all_cancelled", cancelled == calls && ran.load() == 0 && aborted.load() == calls)});
}

// ---------------------------------------------------------------------------------
// W6: a task re-posting itself on its own loop.

struct SelfPost {
  asio::io_context* ioc;
  int64_t left;
  Clock::time_point end;
  std::promise<void> done;
};

struct Again {
  SelfPost* s;
  void operator()() const {
    if (--s->left == 0) {
      s->end = Clock::now();
      s->done.set_value();
      return;
    }
    asio::post(*s->ioc, Again{s});
  }
};

void W6() {
  const int64_t n = Size(10'000'000);
  Loop loop;
  OnLoop(loop, [] {});
  auto t = Rounds([&] {
    SelfPost s{&loop.ioc(), n, {}, {}};
    std::future<void> done = s.done.get_future();
    Clock::time_point start;
    OnLoop(loop, [&] {
      start = Clock::now();
      asio::post(loop.ioc(), Again{&s});
    });
    done.get();
    OnLoop(loop, [] {});  // the last task has returned from set_value()
    return Seconds(start, s.end);
  });
  Report("W6", n, t, {Number("tasks_per_s", static_cast<double>(n) / Median(t))});
}

// ---------------------------------------------------------------------------------

constexpr Cli kCli{"asio_inproc", "[--divisor=N] [--workloads=W1,...,W6] [--idle-ms=MS]"};

}  // namespace

int main(int argc, char** argv) {
  WarmHeap();
  std::vector<std::string> workloads = {"W1", "W2", "W3", "W4", "W5", "W6"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--divisor=", 0) == 0) {
      g_divisor = kCli.Int(a, 10, 1, INT64_MAX);
    } else if (a.rfind("--idle-ms=", 0) == 0) {
      g_idle_ms = kCli.Int(a, 10, 1, INT64_MAX);
    } else if (a.rfind("--workloads=", 0) == 0) {
      workloads.clear();
      std::stringstream list(a.substr(12));
      for (std::string w; std::getline(list, w, ',');) workloads.push_back(w);
    } else {
      kCli.Usage("unknown argument " + a);
    }
  }
  std::printf(
      "{\"peer\":\"asio\",\"context\":{\"boost_version\":\"%d.%d.%d\",\"asio_version\":%d,"
      "\"compiler\":%s,\"io_context_concurrency_hint\":1,\"divisor\":%lld}}\n",
      BOOST_VERSION / 100000, BOOST_VERSION / 100 % 1000, BOOST_VERSION % 100, BOOST_ASIO_VERSION,
      Quote("g++ " __VERSION__).c_str(), static_cast<long long>(g_divisor));
  std::fflush(stdout);
  for (const std::string& w : workloads) {
    if (w == "W1") {
      Producers("W1", 1);
    } else if (w == "W2") {
      Producers("W2", 2);
    } else if (w == "W3") {
      W3();
    } else if (w == "W4") {
      W4();
    } else if (w == "W5") {
      W5();
    } else if (w == "W6") {
      W6();
    } else {
      kCli.Usage("unknown workload " + w);
    }
  }
  return g_failed ? 1 : 0;
}
