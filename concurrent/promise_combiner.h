// PromiseCombiner: completes one aggregate promise when every added future is done.
//
//   PromiseCombiner combiner(loop);           // used on loop's thread only
//   combiner.Add(write_a);
//   combiner.Add(write_b);
//   combiner.Finish(all_written);             // succeeds when both succeed, else fails
//                                             // with the first cause seen
//
// Netty's PromiseCombiner: futures may complete before or after Finish(); the aggregate
// completes (with TrySuccess / TryFailure, so it is fine if it completed already) once
// Finish() was called and the last added future is done. A cancelled future counts as a
// failure with cause kCancelled.
//
// Thread safety: loop-confined. Add, AddAll and Finish must be called on executor()'s
// thread (they return FailedPrecondition elsewhere); the added futures may complete on
// any thread (their completion hops to the executor). With a null executor the combiner
// may be used from any one thread at a time.
// Ownership: the combiner may be destroyed before the futures complete; the aggregate
// still completes.
#ifndef GYRE_CONCURRENT_PROMISE_COMBINER_H_
#define GYRE_CONCURRENT_PROMISE_COMBINER_H_

#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"

namespace gyre {

class PromiseCombiner {
 public:
  explicit PromiseCombiner(EventExecutor* executor);
  PromiseCombiner(const PromiseCombiner&) = delete;
  PromiseCombiner& operator=(const PromiseCombiner&) = delete;

  // Adds a future to wait for. Returns FailedPrecondition after Finish() or off the
  // executor's thread, InvalidArgument for an empty future; nothing is added then.
  template <typename T>
  absl::Status Add(const Future<T>& future) {
    if (!future.valid()) return absl::InvalidArgumentError("PromiseCombiner::Add: empty future");
    absl::Status allowed = CheckAddAllowed();
    if (!allowed.ok()) return allowed;
    ++state_->expected;
    std::shared_ptr<State> state = state_;
    future.AddListener([state](const Future<T>& done) { OnDone(state, done.Cause()); });
    return absl::OkStatus();
  }

  // Adds each future in order; stops at the first error and returns it.
  template <typename... Fs>
  absl::Status AddAll(const Fs&... futures) {
    absl::Status status;
    ((status.ok() ? (void)(status = Add(futures)) : (void)0), ...);
    return status;
  }

  // Sets the aggregate and completes it at once if every added future is done. Returns
  // FailedPrecondition if called twice or off the executor's thread, InvalidArgument for
  // an empty (moved-from) promise; the combiner is unchanged then and Finish may be
  // called again.
  absl::Status Finish(Promise<void> aggregate);

  EventExecutor* executor() const { return state_->executor; }

 private:
  struct State {
    explicit State(EventExecutor* e) : executor(e) {}
    EventExecutor* const executor;
    int expected = 0;
    int done = 0;
    absl::Status cause;  // the first failure seen
    std::optional<Promise<void>> aggregate;
  };

  absl::Status CheckAddAllowed() const;
  static void OnDone(const std::shared_ptr<State>& state, absl::Status cause);
  static void OnDoneOnLoop(State& state, absl::Status cause);
  static void TryComplete(State& state);

  std::shared_ptr<State> state_;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_PROMISE_COMBINER_H_
