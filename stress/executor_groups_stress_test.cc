// Stress: many producers submitting to several executor groups while those groups are
// shut down, one after another. Guards "nothing accepted is lost" (ARCHITECTURE.md):
// every Execute that returned OK and every Submit whose future was not rejected ran
// exactly once; every other submission was told it was rejected (FailedPrecondition
// once shut down, ResourceExhausted from a full bounded queue) and never ran; the
// counts add up, also against the executors' own snapshots.
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/stress/stress_util.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

enum Outcome : uint8_t { kUnset = 0, kAccepted, kShutDown, kFull, kOther };

Outcome Classify(const absl::Status& s) {
  if (s.ok()) return kAccepted;
  if (s.code() == absl::StatusCode::kFailedPrecondition) return kShutDown;
  if (s.code() == absl::StatusCode::kResourceExhausted) return kFull;
  return kOther;
}

TEST(ExecutorGroupsStressTest, ProducersAcrossGroupShutdownsLoseNothing) {
  constexpr int kGroups = 3;
  constexpr int kProducers = 6;
  const int per_producer = stress::Scaled(150'000, 2'000'000);
  const int total = per_producer * kProducers;

  std::vector<std::unique_ptr<DefaultEventExecutorGroup>> groups;
  for (int g = 0; g < kGroups; ++g) {
    GroupOptions o;
    if (g == 1) o.max_pending_tasks = 64;  // a bounded group: "full" is a rejection too
    auto group = DefaultEventExecutorGroup::Create(g == 2 ? 1 : 2, o);
    ASSERT_TRUE(group.ok()) << group.status();
    groups.push_back(*std::move(group));
  }

  std::unique_ptr<std::atomic<uint8_t>[]> runs(new std::atomic<uint8_t>[total]);
  std::unique_ptr<uint8_t[]> outcome(new uint8_t[total]);
  std::unique_ptr<uint8_t[]> group_of(new uint8_t[total]);
  for (int i = 0; i < total; ++i) {
    runs[i].store(0, std::memory_order_relaxed);
    outcome[i] = kUnset;
  }
  // Futures of accepted Submits that were not yet done when Submit returned.
  std::vector<std::vector<std::pair<int, Future<int>>>> open(kProducers);
  std::atomic<int> submitted{0};

  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int k = 0; k < per_producer; ++k) {
        const int id = p * per_producer + k;
        const int g = (id * 7 + p) % kGroups;
        group_of[id] = static_cast<uint8_t>(g);
        if (k % 2 == 0) {
          absl::Status s = groups[g]->Execute(
              [&runs, id] { runs[id].fetch_add(1, std::memory_order_relaxed); });
          outcome[id] = Classify(s);
        } else {
          Future<int> f = groups[g]->Submit([&runs, id] {
            runs[id].fetch_add(1, std::memory_order_relaxed);
            return id;
          });
          // A rejected Submit returns an already-failed future; the task never throws.
          if (f.IsDone() && !f.IsSuccess()) {
            outcome[id] = Classify(f.Cause());
          } else {
            outcome[id] = kAccepted;
            if (!f.IsDone()) open[p].emplace_back(id, f);
          }
        }
        submitted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Shut the groups down one by one while the producers are still going.
  std::vector<Future<void>> terminations;
  for (int g = 0; g < kGroups; ++g) {
    const int mark = total * (g + 1) / (kGroups + 2);
    while (submitted.load(std::memory_order_relaxed) < mark) std::this_thread::yield();
    terminations.push_back(groups[g]->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(60)));
  }
  for (auto& t : producers) t.join();
  for (auto& t : terminations) {
    ASSERT_TRUE(t.AwaitFor(gyre::testing::Scaled(absl::Seconds(120))));
    ASSERT_TRUE(t.IsSuccess()) << t.Cause();
  }

  int64_t accepted[kGroups] = {}, rejected[kGroups] = {};
  int64_t full = 0;
  for (int i = 0; i < total; ++i) {
    ASSERT_NE(outcome[i], kOther) << "submission " << i << " got an unexpected status";
    ASSERT_NE(outcome[i], kUnset) << "submission " << i << " has no outcome";
    const int g = group_of[i];
    if (outcome[i] == kAccepted) {
      ++accepted[g];
      ASSERT_EQ(runs[i].load(), 1) << "accepted task " << i << " ran " << int(runs[i].load());
    } else {
      ++rejected[g];
      if (outcome[i] == kFull) {
        ASSERT_EQ(g, 1) << "only the bounded group may be full";
        ++full;
      }
      ASSERT_EQ(runs[i].load(), 0) << "rejected task " << i << " ran";
    }
  }
  for (auto& list : open) {
    for (auto& [id, f] : list) {
      ASSERT_TRUE(f.IsDone()) << "accepted Submit " << id << " never completed";
      ASSERT_TRUE(f.IsSuccess()) << id << ": " << f.Cause();
      ASSERT_EQ(*f.GetNow(), id);
    }
  }
  int64_t sum = 0;
  for (int g = 0; g < kGroups; ++g) {
    sum += accepted[g] + rejected[g];
    EXPECT_GT(accepted[g], 0) << "group " << g;
    EXPECT_GT(rejected[g], 0) << "group " << g << " was shut down while producers ran";
    // The executors' own books agree with the submitters'.
    uint64_t completed = 0, refused = 0, pending = 0;
    for (const ExecutorSnapshot& e : groups[g]->Snapshot().executors) {
      completed += e.completed_tasks;
      refused += e.rejected_tasks;
      pending += e.pending_tasks;
      EXPECT_EQ(e.state, ExecutorState::kTerminated);
    }
    EXPECT_EQ(pending, 0u) << "group " << g;
    EXPECT_EQ(completed, static_cast<uint64_t>(accepted[g])) << "group " << g;
    EXPECT_EQ(refused, static_cast<uint64_t>(rejected[g])) << "group " << g;
  }
  EXPECT_EQ(sum, total);
  RecordProperty("submissions", total);
  RecordProperty("full_rejections", static_cast<int>(full));
}

}  // namespace
}  // namespace gyre
