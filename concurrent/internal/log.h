// Minimal logging and checks for gyre's internals (Abseil 20220623 has no absl/log).
//
//   GYRE_LOG(WARNING) << "listener threw: " << e.what();
//   GYRE_CHECK(ptr != nullptr) << "context";
//   GYRE_DCHECK(InEventLoop());
//
// Messages go to a process-wide sink (stderr by default; SetLogSinkForTesting replaces
// it). GYRE_CHECK is for programmer errors inside gyre only; user input never reaches a
// CHECK (it gets an absl::Status instead).
//
// Thread safety: all functions and macros are thread-safe.
#ifndef GYRE_CONCURRENT_INTERNAL_LOG_H_
#define GYRE_CONCURRENT_INTERNAL_LOG_H_

#include <atomic>
#include <sstream>
#include <string>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/functional/any_invocable.h"

namespace gyre {
namespace internal {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Receives one formatted line per message. Called on the logging thread, possibly
// concurrently from several threads.
using LogSink = absl::AnyInvocable<void(LogSeverity, const char* file, int line,
                                        const std::string& message) const>;

// Replaces the process-wide sink; an empty sink restores stderr. Not for concurrent use
// with itself. Returns nothing; the previous sink is destroyed.
void SetLogSinkForTesting(LogSink sink);

// Messages below this severity are dropped (default kInfo).
void SetMinLogSeverity(LogSeverity severity);
LogSeverity MinLogSeverity();

// One message; the destructor emits it (and aborts for kFatal).
class LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  ~LogMessage();

  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  const char* file_;
  int line_;
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream` discard the stream expression.
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace gyre

#define GYRE_LOG_SEVERITY_INFO ::gyre::internal::LogSeverity::kInfo
#define GYRE_LOG_SEVERITY_WARNING ::gyre::internal::LogSeverity::kWarning
#define GYRE_LOG_SEVERITY_ERROR ::gyre::internal::LogSeverity::kError
#define GYRE_LOG_SEVERITY_FATAL ::gyre::internal::LogSeverity::kFatal

#define GYRE_LOG(severity)                                                  \
  (GYRE_LOG_SEVERITY_##severity < ::gyre::internal::MinLogSeverity())       \
      ? (void)0                                                             \
      : ::gyre::internal::LogVoidify() &                                    \
            ::gyre::internal::LogMessage(GYRE_LOG_SEVERITY_##severity,      \
                                         __FILE__, __LINE__)                \
                .stream()

#define GYRE_CHECK(condition)                                               \
  ABSL_PREDICT_TRUE(condition)                                              \
  ? (void)0                                                                 \
  : ::gyre::internal::LogVoidify() &                                        \
        ::gyre::internal::LogMessage(::gyre::internal::LogSeverity::kFatal, \
                                     __FILE__, __LINE__)                    \
                .stream()                                                   \
            << "Check failed: " #condition " "

#ifdef NDEBUG
#define GYRE_DCHECK(condition) \
  while (false) GYRE_CHECK(condition)
#else
#define GYRE_DCHECK(condition) GYRE_CHECK(condition)
#endif

#endif  // GYRE_CONCURRENT_INTERNAL_LOG_H_
