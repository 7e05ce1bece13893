// MultithreadEventExecutorGroup: a group of N executors, one thread each, handed out
// round-robin by a chooser.
//
//   class MyGroup : public MultithreadEventExecutorGroup {
//    public:
//     static absl::StatusOr<std::unique_ptr<MyGroup>> Create(int n, GroupOptions o) {
//       std::unique_ptr<MyGroup> g(new MyGroup(std::move(o)));
//       GYRE_RETURN_IF_ERROR(g->Init(n));
//       return g;
//     }
//    protected:
//     absl::StatusOr<std::unique_ptr<EventExecutor>> NewChild(int index) override;
//   };
//
// Construction is two-phase (constructor, then Init) so that NewChild can be virtual
// and failures are statuses: n_threads <= 0 is InvalidArgument; if child i cannot be
// created, children 0..i-1 are shut down and joined, and the error is returned.
// The group's termination future succeeds when the last child has terminated; the
// lifecycle predicates hold when they hold for every child; AwaitTermination shares
// one deadline across the children. A named group is listed in the process-wide
// ExecutorGroupRegistry while it lives.
//
// Thread safety: every public method is thread-safe.
// Ownership: owns its children; destroying the group shuts them down (quiet period
// zero) and joins their threads.
#ifndef GYRE_CONCURRENT_MULTITHREAD_EVENT_EXECUTOR_GROUP_H_
#define GYRE_CONCURRENT_MULTITHREAD_EVENT_EXECUTOR_GROUP_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gyre/concurrent/abstract_event_executor_group.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/event_executor_chooser.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/thread_factory.h"

namespace gyre {

// What a group reports about itself.
struct GroupSnapshot {
  std::string name;
  std::string chooser;  // "PowerOfTwo", "Generic" or "Custom"
  std::string kind;     // GroupKind(): "executor", "nio", ...
  bool shutting_down = false;
  bool terminated = false;
  std::vector<ExecutorSnapshot> executors;
};

class MultithreadEventExecutorGroup : public AbstractEventExecutorGroup {
 public:
  ~MultithreadEventExecutorGroup() override;

  EventExecutor* NextExecutor() override { return chooser_->Next(); }
  std::vector<EventExecutor*> executors() const override { return views_; }
  int ExecutorCount() const { return static_cast<int>(children_.size()); }

  using EventExecutorGroup::ShutdownGracefully;
  // Forwards to every child; returns the group's termination future.
  Future<void> ShutdownGracefully(absl::Duration quiet_period, absl::Duration timeout) override;
  Future<void> TerminationFuture() const override { return termination_; }
  bool IsShuttingDown() const override;
  bool IsShutdown() const override;
  bool IsTerminated() const override;
  bool AwaitTermination(absl::Duration timeout) override;

  const std::string& name() const { return options_.name; }
  GroupSnapshot Snapshot() const;
  // What kind of group this is, for the admin service: "executor" unless a subclass
  // says otherwise (event-loop groups name their transport, e.g. "nio").
  virtual std::string_view GroupKind() const { return "executor"; }

 protected:
  explicit MultithreadEventExecutorGroup(GroupOptions options);

  // Creates the children through NewChild, the chooser, and the termination fan-in;
  // registers a named group. Call once, from the subclass's Create.
  absl::Status Init(int n_threads);

  // Makes child `index` (0-based). Its parent should be `this`.
  virtual absl::StatusOr<std::unique_ptr<EventExecutor>> NewChild(int index) = 0;

  const GroupOptions& options() const { return options_; }
  // The factory every child should use (the option's, or one made for the group).
  const std::shared_ptr<ThreadFactory>& thread_factory() const { return thread_factory_; }

 private:
  GroupOptions options_;
  std::shared_ptr<ThreadFactory> thread_factory_;
  std::vector<std::unique_ptr<EventExecutor>> children_;
  std::vector<EventExecutor*> views_;
  std::unique_ptr<EventExecutorChooser> chooser_;
  std::string chooser_kind_;
  Promise<void> termination_;
  bool registered_ = false;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_MULTITHREAD_EVENT_EXECUTOR_GROUP_H_
