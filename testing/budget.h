// Test budgets that know the build: durations and iteration counts scaled for the
// sanitizers, and a bounded wait for a condition.
//
//   ASSERT_TRUE(gyre::testing::Eventually([&] { return done.load(); }));
//   for (int64_t i = 0; i < gyre::testing::Iterations(20'000); ++i) ...
//   ASSERT_TRUE(future.AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
//
// A budget here is a limit that only a broken program reaches (a hang, a lost wake-up),
// never a measurement: a test that passes must pass however slowly the machine runs.
// `Scaled` multiplies a duration by the slowdown of the build (ThreadSanitizer 10x,
// AddressSanitizer 3x, other builds 1x); GYRE_TEST_BUDGET_SCALE (a positive number) in
// the environment multiplies it further, for a machine known to be slower.
// `Iterations` divides a loop count by the same build factor (at least 1), so that a
// sanitized run does the same kind of work in about the same time.
//
// Thread safety: every function is thread-safe.
#ifndef GYRE_TESTING_BUDGET_H_
#define GYRE_TESTING_BUDGET_H_

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gyre {
namespace testing {

#if defined(__SANITIZE_THREAD__)
#define GYRE_TESTING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GYRE_TESTING_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GYRE_TESTING_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GYRE_TESTING_ASAN 1
#endif
#endif

#if defined(GYRE_TESTING_TSAN)
inline constexpr int kBuildSlowdown = 10;
#elif defined(GYRE_TESTING_ASAN)
inline constexpr int kBuildSlowdown = 3;
#else
inline constexpr int kBuildSlowdown = 1;
#endif

// True under ThreadSanitizer or AddressSanitizer.
inline constexpr bool kSanitized = kBuildSlowdown > 1;

// The extra factor from GYRE_TEST_BUDGET_SCALE (1 when unset or not a positive number).
inline double EnvironmentScale() {
  const char* s = std::getenv("GYRE_TEST_BUDGET_SCALE");
  if (s == nullptr) return 1.0;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  return (end != s && v > 0) ? v : 1.0;
}

// `d` stretched by the build's slowdown and the environment's scale.
inline absl::Duration Scaled(absl::Duration d) {
  return d * (kBuildSlowdown * EnvironmentScale());
}

// `n` divided by the build's slowdown, at least 1 (for n >= 1).
inline int64_t Iterations(int64_t n) {
  if (n <= 0) return n;
  int64_t m = n / kBuildSlowdown;
  return m > 0 ? m : 1;
}

// Polls `predicate` until it returns true or `budget` (scaled) passes on the monotonic
// clock; returns the last result. Polls back off from a yield to 1 ms sleeps: this is
// a wait for a condition another thread makes true, not a timer.
template <typename Predicate>
bool Eventually(Predicate&& predicate, absl::Duration budget = absl::Seconds(30)) {
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(Scaled(budget));
  int polls = 0;
  while (true) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return predicate();
    if (++polls < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_BUDGET_H_
