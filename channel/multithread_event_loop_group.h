// MultithreadEventLoopGroup: the base of every event-loop group with a fixed set of
// loops, one thread each (NioEventLoopGroup is one). It resolves, once, the two ways
// such a group is an executor group (a MultithreadEventExecutorGroup and an
// EventLoopGroup), hands loops out through the group's chooser, and fills in each
// loop's options from the group's.
//
//   class MyLoopGroup final : public MultithreadEventLoopGroup {
//    public:
//     static absl::StatusOr<std::unique_ptr<MyLoopGroup>> Create(int n, GroupOptions o) {
//       std::unique_ptr<MyLoopGroup> g(new MyLoopGroup(std::move(o)));
//       GYRE_RETURN_IF_ERROR(g->InitLoops(n));      // 0: DefaultLoopCount()
//       return g;
//     }
//     std::string_view GroupKind() const override { return "my"; }
//    protected:
//     absl::StatusOr<std::unique_ptr<SingleThreadEventLoop>> NewEventLoop(
//         int index, ExecutorOptions options) override;
//    private:
//     using MultithreadEventLoopGroup::MultithreadEventLoopGroup;
//   };
//
// Creation, the termination fan-in, the lifecycle predicates and the registry listing
// are MultithreadEventExecutorGroup's (see there).
//
// Thread safety: every public method is thread-safe.
// Ownership: owns its loops; destroying the group shuts them down and joins them.
#ifndef GYRE_CHANNEL_MULTITHREAD_EVENT_LOOP_GROUP_H_
#define GYRE_CHANNEL_MULTITHREAD_EVENT_LOOP_GROUP_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/concurrent/executor_options.h"
#include "gyre/concurrent/multithread_event_executor_group.h"

namespace gyre {

class MultithreadEventLoopGroup : public MultithreadEventExecutorGroup, public EventLoopGroup {
 public:
  // Loops a group makes when asked for 0: twice the hardware concurrency (at least 2).
  static int DefaultLoopCount();

  ~MultithreadEventLoopGroup() override;

  // The next loop, by the group's chooser.
  EventLoop* Next() { return NextEventLoop(); }
  EventLoop* NextEventLoop() override;

  // MultithreadEventExecutorGroup and EventLoopGroup: one answer for each method both
  // paths declare.
  EventExecutor* NextExecutor() override { return MultithreadEventExecutorGroup::NextExecutor(); }
  std::vector<EventExecutor*> executors() const override {
    return MultithreadEventExecutorGroup::executors();
  }
  std::string_view GroupKind() const override { return "event_loop"; }

  // The loops, in creation order (fixed once the group is created).
  const std::vector<SingleThreadEventLoop*>& event_loops() const { return loops_; }

 protected:
  explicit MultithreadEventLoopGroup(GroupOptions options)
      : MultithreadEventExecutorGroup(std::move(options)) {}

  // Creates `n_threads` loops through NewEventLoop (0: DefaultLoopCount()).
  // InvalidArgument when n_threads < 0; a loop's creation error otherwise (the loops
  // made before it are shut down and joined). Call once, from the subclass's Create.
  absl::Status InitLoops(int n_threads);

  // Makes loop `index` (0-based) with `options`: the group's thread factory, queue
  // bound, rejection handler and ticker, named after the group (or GroupKind()). Its
  // parent should be `this`.
  virtual absl::StatusOr<std::unique_ptr<SingleThreadEventLoop>> NewEventLoop(
      int index, ExecutorOptions options) = 0;

 private:
  absl::StatusOr<std::unique_ptr<EventExecutor>> NewChild(int index) final;

  std::vector<SingleThreadEventLoop*> loops_;  // written during InitLoops only
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_MULTITHREAD_EVENT_LOOP_GROUP_H_
