#include "gyre/benchmarks/load/load_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace gyre {
namespace load {

LatencySummary LatencyRecorder::Summarize(absl::Duration elapsed) const {
  LatencySummary s;
  if (nanos_.empty() || elapsed <= absl::ZeroDuration()) return s;
  std::vector<int64_t> sorted = nanos_;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  auto rank = [&](double q) {
    size_t r = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    return sorted[std::clamp<size_t>(r, 1, n) - 1];
  };
  s.count = static_cast<int64_t>(n);
  s.per_second = static_cast<double>(n) / absl::ToDoubleSeconds(elapsed);
  s.p50 = absl::Nanoseconds(rank(0.50));
  s.p99 = absl::Nanoseconds(rank(0.99));
  s.max = absl::Nanoseconds(sorted.back());
  return s;
}

std::string SummaryJson(const LatencySummary& s, int connections, int size) {
  return absl::StrFormat(
      "{\"connections\":%d,\"size\":%d,\"messages\":%d,\"msgs_per_sec\":%.0f,"
      "\"p50_us\":%.1f,\"p99_us\":%.1f,\"max_us\":%.1f}",
      connections, size, s.count, s.per_second, absl::ToDoubleMicroseconds(s.p50),
      absl::ToDoubleMicroseconds(s.p99), absl::ToDoubleMicroseconds(s.max));
}

}  // namespace load
}  // namespace gyre
