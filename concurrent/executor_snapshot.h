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
  // Memory the loop thread keeps for the states of the timers it schedules (chunks of
  // its timer arena, reused; as much as its timers needed at their peak). 0 before the
  // thread starts, once it has ended, and where timers use the heap (sanitizer builds).
  size_t timer_memory_bytes = 0;
  absl::Duration busy_time;      // time spent running tasks
  absl::Duration uptime;         // since the thread started; zero until then

  // Whether a task, a timer or (on an event loop) an I/O handler is running right now,
  // and for how long it has been. Read from a stamp the loop publishes with a relaxed
  // store (CLOCK_MONOTONIC_COARSE, a few ms of resolution) at the start of each batch
  // (an I/O batch too) and before every kTaskStampEvery-th task, so the age is an upper
  // bound: exact for the first task of a batch, otherwise
  // at most the run time of the up to kTaskStampEvery - 1 tasks before it in the batch.
  // A task that blocks the loop is seen without blocking the reader.
  bool running_task = false;
  absl::Duration running_task_age;

  // Event loops only (event_loop is true): channels registered with the loop, and time
  // spent handling I/O readiness (busy_time is then the time spent on tasks).
  bool event_loop = false;
  int registered_channels = 0;
  absl::Duration io_time;
};

// How often (in tasks) a loop refreshes its running-task stamp within a batch.
inline constexpr int kTaskStampEvery = 32;

// CLOCK_MONOTONIC_COARSE in nanoseconds (always > 0): the clock of the running-task
// stamp. Cheap (no system call), a few milliseconds of resolution.
int64_t CoarseMonotonicNanos();

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EXECUTOR_SNAPSHOT_H_
