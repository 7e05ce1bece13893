#include "gyre/concurrent/internal/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace gyre {
namespace internal {
namespace {

std::mutex& SinkMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

LogSink*& Sink() {
  static LogSink* sink = nullptr;
  return sink;
}

// Relaxed: the level is a filter, not a synchronization point.
std::atomic<int> min_severity{static_cast<int>(LogSeverity::kInfo)};

const char* SeverityName(LogSeverity s) {
  switch (s) {
    case LogSeverity::kInfo:
      return "I";
    case LogSeverity::kWarning:
      return "W";
    case LogSeverity::kError:
      return "E";
    case LogSeverity::kFatal:
      return "F";
  }
  return "?";
}

const char* Basename(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

void SetLogSinkForTesting(LogSink sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  delete Sink();
  Sink() = sink ? new LogSink(std::move(sink)) : nullptr;
}

void SetMinLogSeverity(LogSeverity severity) {
  min_severity.store(static_cast<int>(severity), std::memory_order_relaxed);
}

LogSeverity MinLogSeverity() {
  return static_cast<LogSeverity>(min_severity.load(std::memory_order_relaxed));
}

LogMessage::LogMessage(LogSeverity severity, const char* file, int line)
    : severity_(severity), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  const std::string message = stream_.str();
  {
    std::lock_guard<std::mutex> lock(SinkMutex());
    if (Sink() != nullptr) {
      (*Sink())(severity_, file_, line_, message);
    } else {
      std::fprintf(stderr, "gyre %s %s:%d] %s\n", SeverityName(severity_),
                   Basename(file_), line_, message.c_str());
      std::fflush(stderr);
    }
  }
  if (severity_ == LogSeverity::kFatal) std::abort();
}

}  // namespace internal
}  // namespace gyre
