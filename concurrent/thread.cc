#include "gyre/concurrent/thread.h"

#include <utility>

namespace gyre {

Thread::Thread(std::thread thread, std::string name)
    : thread_(std::move(thread)), id_(thread_.get_id()), name_(std::move(name)) {}

Thread::~Thread() { Join(); }

void Thread::Join() {
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
    return;
  }
  thread_.join();
}

}  // namespace gyre
