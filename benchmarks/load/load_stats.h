// Round-trip statistics for the load client: collects latencies and reports
// percentiles and a rate.
//
//   LatencyRecorder r;
//   r.Add(absl::Microseconds(42));
//   LatencySummary s = r.Summarize(absl::Seconds(10));
//
// Thread safety: thread-compatible (one recorder per client thread).
// Ownership: a value type.
#ifndef GYRE_BENCHMARKS_LOAD_LOAD_STATS_H_
#define GYRE_BENCHMARKS_LOAD_LOAD_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace gyre {
namespace load {

struct LatencySummary {
  int64_t count = 0;
  double per_second = 0;  // count / elapsed
  absl::Duration p50;
  absl::Duration p99;
  absl::Duration max;
};

class LatencyRecorder {
 public:
  void Add(absl::Duration d) { nanos_.push_back(absl::ToInt64Nanoseconds(d)); }
  int64_t count() const { return static_cast<int64_t>(nanos_.size()); }
  // Percentiles by nearest rank; all zero when nothing was recorded or elapsed <= 0.
  LatencySummary Summarize(absl::Duration elapsed) const;

 private:
  std::vector<int64_t> nanos_;
};

// One JSON object on one line: {"connections":..,"size":..,"msgs_per_sec":..,...}.
std::string SummaryJson(const LatencySummary& s, int connections, int size);

}  // namespace load
}  // namespace gyre

#endif  // GYRE_BENCHMARKS_LOAD_LOAD_STATS_H_
