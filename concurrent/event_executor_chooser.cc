#include "gyre/concurrent/event_executor_chooser.h"

#include <utility>

namespace gyre {

PowerOfTwoEventExecutorChooser::PowerOfTwoEventExecutorChooser(
    std::vector<EventExecutor*> executors, uint64_t start)
    : executors_(std::move(executors)), mask_(executors_.size() - 1), index_(start) {}

EventExecutor* PowerOfTwoEventExecutorChooser::Next() {
  return executors_[index_.fetch_add(1, std::memory_order_relaxed) & mask_];
}

GenericEventExecutorChooser::GenericEventExecutorChooser(std::vector<EventExecutor*> executors,
                                                         uint64_t start)
    : executors_(std::move(executors)), index_(start) {}

EventExecutor* GenericEventExecutorChooser::Next() {
  return executors_[index_.fetch_add(1, std::memory_order_relaxed) % executors_.size()];
}

DefaultEventExecutorChooserFactory* DefaultEventExecutorChooserFactory::Instance() {
  static DefaultEventExecutorChooserFactory* const instance = new DefaultEventExecutorChooserFactory();
  return instance;
}

std::unique_ptr<EventExecutorChooser> DefaultEventExecutorChooserFactory::NewChooser(
    std::vector<EventExecutor*> executors) {
  size_t n = executors.size();
  if (n != 0 && (n & (n - 1)) == 0) {
    return std::make_unique<PowerOfTwoEventExecutorChooser>(std::move(executors));
  }
  return std::make_unique<GenericEventExecutorChooser>(std::move(executors));
}

}  // namespace gyre
