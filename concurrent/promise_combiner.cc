#include "gyre/concurrent/promise_combiner.h"

#include <utility>

namespace gyre {

PromiseCombiner::PromiseCombiner(EventExecutor* executor)
    : state_(std::make_shared<State>(executor)) {}

absl::Status PromiseCombiner::CheckAddAllowed() const {
  if (state_->executor != nullptr && !state_->executor->InEventLoop()) {
    return absl::FailedPreconditionError("PromiseCombiner used off its executor's thread");
  }
  if (state_->aggregate.has_value()) {
    return absl::FailedPreconditionError("PromiseCombiner: Add after Finish");
  }
  return absl::OkStatus();
}

absl::Status PromiseCombiner::Finish(Promise<void> aggregate) {
  if (state_->executor != nullptr && !state_->executor->InEventLoop()) {
    return absl::FailedPreconditionError("PromiseCombiner used off its executor's thread");
  }
  if (state_->aggregate.has_value()) {
    return absl::FailedPreconditionError("PromiseCombiner: Finish called twice");
  }
  if (!aggregate.valid()) {
    // B58: nothing is stored, so a later Finish with a real aggregate still works.
    return absl::InvalidArgumentError("PromiseCombiner::Finish: empty aggregate promise");
  }
  state_->aggregate.emplace(std::move(aggregate));
  if (state_->done == state_->expected) TryComplete(*state_);
  return absl::OkStatus();
}

void PromiseCombiner::OnDone(const std::shared_ptr<State>& state, absl::Status cause) {
  if (state->executor == nullptr || state->executor->InEventLoop()) {
    OnDoneOnLoop(*state, std::move(cause));
    return;
  }
  std::shared_ptr<State> keep = state;
  absl::Status rejected = state->executor->Execute(
      [keep, cause]() mutable { OnDoneOnLoop(*keep, std::move(cause)); });
  if (!rejected.ok()) {
    // The executor is gone: complete here rather than never.
    OnDoneOnLoop(*state, std::move(cause));
  }
}

void PromiseCombiner::OnDoneOnLoop(State& state, absl::Status cause) {
  ++state.done;
  if (!cause.ok() && state.cause.ok()) state.cause = std::move(cause);
  if (state.done == state.expected && state.aggregate.has_value()) TryComplete(state);
}

void PromiseCombiner::TryComplete(State& state) {
  if (state.cause.ok()) {
    state.aggregate->TrySuccess();
  } else {
    state.aggregate->TryFailure(state.cause);
  }
}

}  // namespace gyre
