#include "gyre/concurrent/multithread_event_executor_group.h"

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gyre/concurrent/executor_group_registry.h"

namespace gyre {

MultithreadEventExecutorGroup::MultithreadEventExecutorGroup(GroupOptions options)
    : options_(std::move(options)),
      thread_factory_(options_.thread_factory != nullptr
                          ? options_.thread_factory
                          : std::make_shared<DefaultThreadFactory>(
                                options_.name.empty() ? ToPoolName("DefaultEventExecutorGroup")
                                                      : options_.name)),
      termination_() {}

MultithreadEventExecutorGroup::~MultithreadEventExecutorGroup() {
  if (registered_) ExecutorGroupRegistry::Global().Unregister(this);
  // Shut every child down first, so they stop in parallel; then each destructor joins.
  for (auto& child : children_) {
    if (!child->IsShuttingDown()) child->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15));
  }
  views_.clear();
  chooser_.reset();
  children_.clear();
}

absl::Status MultithreadEventExecutorGroup::Init(int n_threads) {
  if (n_threads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("n_threads must be > 0, got ", n_threads));
  }
  children_.reserve(static_cast<size_t>(n_threads));
  for (int i = 0; i < n_threads; ++i) {
    absl::StatusOr<std::unique_ptr<EventExecutor>> child = NewChild(i);
    absl::Status error = child.ok() && *child == nullptr
                             ? absl::InternalError("NewChild returned null")
                             : child.status();
    if (!error.ok()) {
      for (auto& made : children_) made->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(15));
      for (auto& made : children_) made->AwaitTermination(absl::InfiniteDuration());
      children_.clear();  // joins
      return absl::Status(error.code(), absl::StrCat("failed to create child executor ", i, " of ",
                                                     n_threads, ": ", error.message()));
    }
    children_.push_back(*std::move(child));
  }
  for (auto& child : children_) views_.push_back(child.get());
  EventExecutorChooserFactory* factory = options_.chooser_factory != nullptr
                                             ? options_.chooser_factory
                                             : DefaultEventExecutorChooserFactory::Instance();
  chooser_ = factory->NewChooser(views_);
  if (chooser_ == nullptr) {
    children_.clear();
    views_.clear();
    return absl::InvalidArgumentError("the chooser factory returned null");
  }
  if (dynamic_cast<PowerOfTwoEventExecutorChooser*>(chooser_.get()) != nullptr) {
    chooser_kind_ = "PowerOfTwo";
  } else if (dynamic_cast<GenericEventExecutorChooser*>(chooser_.get()) != nullptr) {
    chooser_kind_ = "Generic";
  } else {
    chooser_kind_ = "Custom";
  }

  struct FanIn {
    // acq_rel: the last decrement sees every child's termination before completing.
    std::atomic<int> remaining;
    Promise<void> promise;
  };
  auto fan_in = std::make_shared<FanIn>();
  fan_in->remaining.store(n_threads, std::memory_order_relaxed);
  fan_in->promise = termination_;
  for (auto& child : children_) {
    child->TerminationFuture().AddListener([fan_in](const Future<void>&) {
      if (fan_in->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        fan_in->promise.TrySuccess();
      }
    });
  }
  if (!options_.name.empty()) {
    ExecutorGroupRegistry::Global().Register(this);
    registered_ = true;
  }
  return absl::OkStatus();
}

Future<void> MultithreadEventExecutorGroup::ShutdownGracefully(absl::Duration quiet_period,
                                                               absl::Duration timeout) {
  absl::Status valid = ValidateShutdownArguments(quiet_period, timeout);
  if (!valid.ok()) return MakeFailedFuture<void>(nullptr, std::move(valid));
  for (auto& child : children_) child->ShutdownGracefully(quiet_period, timeout);
  return termination_;
}

bool MultithreadEventExecutorGroup::IsShuttingDown() const {
  for (auto& child : children_) {
    if (!child->IsShuttingDown()) return false;
  }
  return true;
}

bool MultithreadEventExecutorGroup::IsShutdown() const {
  for (auto& child : children_) {
    if (!child->IsShutdown()) return false;
  }
  return true;
}

bool MultithreadEventExecutorGroup::IsTerminated() const {
  for (auto& child : children_) {
    if (!child->IsTerminated()) return false;
  }
  return true;
}

bool MultithreadEventExecutorGroup::AwaitTermination(absl::Duration timeout) {
  absl::Time deadline =
      timeout == absl::InfiniteDuration() ? absl::InfiniteFuture() : absl::Now() + timeout;
  for (auto& child : children_) {
    absl::Duration left = deadline == absl::InfiniteFuture() ? absl::InfiniteDuration()
                                                             : deadline - absl::Now();
    if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
    if (!child->AwaitTermination(left)) return false;
  }
  return IsTerminated();
}

GroupSnapshot MultithreadEventExecutorGroup::Snapshot() const {
  GroupSnapshot s;
  s.name = options_.name;
  s.chooser = chooser_kind_;
  s.kind = std::string(GroupKind());
  s.shutting_down = IsShuttingDown();
  s.terminated = IsTerminated();
  for (auto& child : children_) s.executors.push_back(child->Snapshot());
  return s;
}

}  // namespace gyre
