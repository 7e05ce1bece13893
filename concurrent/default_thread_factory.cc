#include "gyre/concurrent/default_thread_factory.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gyre/concurrent/fast_thread_local.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace {

// Relaxed: only uniqueness matters.
std::atomic<int> next_pool_id{1};

}  // namespace

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

}  // namespace gyre
