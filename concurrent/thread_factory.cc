#include "gyre/concurrent/thread_factory.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/fast_thread_local.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace {

// Relaxed: only uniqueness matters.
std::atomic<int> next_pool_id{1};

}  // namespace

namespace internal {

bool SetCurrentThreadName(std::string_view name) {
  std::string truncated(name.substr(0, 15));
  return pthread_setname_np(pthread_self(), truncated.c_str()) == 0;
}

std::string CurrentThreadName() {
  char buf[32] = {0};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) != 0) return "";
  return buf;
}

int CurrentOsThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

}  // namespace internal

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

DefaultThreadFactory::DefaultThreadFactory(std::string pool_name, ThreadOptions options)
    : prefix_(absl::StrCat(pool_name.empty() ? "unknown" : pool_name, "-",
                           next_pool_id.fetch_add(1, std::memory_order_relaxed), "-")),
      options_(options) {}

absl::StatusOr<std::unique_ptr<Thread>> DefaultThreadFactory::NewThread(
    absl::AnyInvocable<void()> body) {
  if (options_.nice.has_value() && (*options_.nice < -20 || *options_.nice > 19)) {
    return absl::InvalidArgumentError(
        absl::StrCat("thread nice value ", *options_.nice, " is outside [-20, 19]"));
  }
  std::string name =
      absl::StrCat(prefix_, next_thread_id_.fetch_add(1, std::memory_order_relaxed));
  std::optional<int> nice = options_.nice;
  try {
    std::thread thread([name, nice, body = std::move(body)]() mutable {
      internal::SetCurrentThreadName(name);
      if (nice.has_value() &&
          setpriority(PRIO_PROCESS, static_cast<id_t>(internal::CurrentOsThreadId()), *nice) != 0) {
        GYRE_LOG(WARNING) << "could not set nice " << *nice << " on thread " << name << ": "
                          << std::strerror(errno);
      }
      body();
      body = nullptr;  // its captures die before the thread locals
      FastThreadLocalRemoveAll();
    });
    return std::make_unique<Thread>(std::move(thread), std::move(name));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot create thread: ", e.what()));
  }
}

std::string ToPoolName(std::string_view class_name) {
  size_t colon = class_name.rfind("::");
  if (colon != std::string_view::npos) class_name = class_name.substr(colon + 2);
  if (class_name.empty()) return "unknown";
  std::string name(class_name);
  if (name.size() == 1) {
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    return name;
  }
  if (std::isupper(static_cast<unsigned char>(name[0])) &&
      std::islower(static_cast<unsigned char>(name[1]))) {
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  }
  return name;
}

}  // namespace gyre
