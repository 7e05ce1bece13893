#include "gyre/concurrent/event_executor_group.h"

#include <utility>

#include "gyre/concurrent/event_executor.h"

namespace gyre {

Future<void> EventExecutorGroup::ShutdownGracefully() {
  return ShutdownGracefully(absl::Seconds(2), absl::Seconds(15));
}

absl::Status EventExecutorGroup::Execute(absl::AnyInvocable<void()> task) {
  return Next()->Execute(std::move(task));
}

}  // namespace gyre
