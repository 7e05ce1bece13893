#include "gyre/concurrent/immediate_event_executor.h"

#include <deque>
#include <utility>

namespace gyre {
namespace {

struct ImmediateFrame {
  bool running = false;
  std::deque<absl::AnyInvocable<void()>> queued;
};

thread_local ImmediateFrame tls_immediate;

}  // namespace

ImmediateEventExecutor::ImmediateEventExecutor()
    : AbstractUnstoppableEventExecutor("ImmediateEventExecutor never terminates") {}

ImmediateEventExecutor* ImmediateEventExecutor::Instance() {
  static ImmediateEventExecutor* const instance = new ImmediateEventExecutor();
  return instance;
}

bool ImmediateEventExecutor::InEventLoop(std::thread::id thread) const {
  return thread == std::this_thread::get_id() && tls_immediate.running;
}

absl::Status ImmediateEventExecutor::Execute(absl::AnyInvocable<void()> task) {
  if (!task) return internal::EmptyTaskError();
  ImmediateFrame& frame = tls_immediate;
  if (frame.running) {
    frame.queued.push_back(std::move(task));
    return absl::OkStatus();
  }
  frame.running = true;
  SafeExecute(task);
  task = nullptr;
  while (!frame.queued.empty()) {
    absl::AnyInvocable<void()> next = std::move(frame.queued.front());
    frame.queued.pop_front();
    SafeExecute(next);
  }
  frame.running = false;
  return absl::OkStatus();
}

}  // namespace gyre
