// ExecutorState and ExecutorSnapshot: what an executor reports about itself.
//
//   ExecutorSnapshot s = executor->Snapshot();      // any thread, never blocks the loop
//   GYRE_LOG(INFO) << s.thread_name << " pending=" << s.pending_tasks;
//
// Thread safety: plain values.
#ifndef GYRE_CONCURRENT_EXECUTOR_SNAPSHOT_H_
#define GYRE_CONCURRENT_EXECUTOR_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace gyre {

// The lifecycle of a single-threaded executor:
//
//   kNotStarted --first task--> kStarted --ShutdownGracefully--> kShuttingDown
//        |                                                          | quiet period
//        | ShutdownGracefully (no thread is ever started)           v or timeout
//        +-----------------------------------------------------> kShutdown (rejects)
//                                                                   | drain, hooks
//                                                                   v
//                                                               kTerminated
enum class ExecutorState { kNotStarted = 1, kStarted, kShuttingDown, kShutdown, kTerminated };

// "NOT_STARTED", "STARTED", "SHUTTING_DOWN", "SHUTDOWN", "TERMINATED".
std::string_view ExecutorStateName(ExecutorState state);

// A consistent-enough picture of one executor, read without stopping it: each field is
// exact at some instant during the Snapshot() call (counters are published per batch).
struct ExecutorSnapshot {
  ExecutorState state = ExecutorState::kNotStarted;
  std::string thread_name;   // empty until the thread started
  int os_tid = 0;            // kernel thread id; 0 until started
  size_t pending_tasks = 0;  // queued, not yet run
  size_t scheduled_tasks = 0;  // in the timer heap
  uint64_t completed_tasks = 0;  // tasks and timer runs finished
  uint64_t rejected_tasks = 0;   // submissions refused (shut down or full)
  absl::Duration busy_time;      // time spent running tasks
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EXECUTOR_SNAPSHOT_H_
