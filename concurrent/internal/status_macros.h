// GYRE_RETURN_IF_ERROR / GYRE_ASSIGN_OR_RETURN (this Abseil has no status macros), and
// CatchAsStatus, which turns what user code throws into a status.
//
//   GYRE_RETURN_IF_ERROR(Validate(options));
//   GYRE_ASSIGN_OR_RETURN(auto group, DefaultEventExecutorGroup::Create(4));
//   absl::Status thrown = internal::CatchAsStatus("Cleanup()", [this] { Cleanup(); });
//
// Thread safety: macros and a stateless function.
#ifndef GYRE_CONCURRENT_INTERNAL_STATUS_MACROS_H_
#define GYRE_CONCURRENT_INTERNAL_STATUS_MACROS_H_

#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gyre {
namespace internal {

// Runs `f()`. Returns OkStatus, or, when it throws, an InternalError naming `what`:
// "<what> threw: <what()>" or "<what> threw a non-std exception". For user code that
// gyre runs where nothing may escape, off the per-task path (a loop's Run() and
// Cleanup(), channel initializers).
template <typename F>
absl::Status CatchAsStatus(absl::string_view what, F&& f) {
  try {
    std::forward<F>(f)();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, " threw: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(what, " threw a non-std exception"));
  }
}

}  // namespace internal
}  // namespace gyre

#define GYRE_RETURN_IF_ERROR(expr)                     \
  do {                                                 \
    ::absl::Status gyre_status_ = (expr);              \
    if (!gyre_status_.ok()) return gyre_status_;       \
  } while (false)

#define GYRE_STATUS_CONCAT_INNER_(a, b) a##b
#define GYRE_STATUS_CONCAT_(a, b) GYRE_STATUS_CONCAT_INNER_(a, b)

#define GYRE_ASSIGN_OR_RETURN(lhs, expr) \
  GYRE_ASSIGN_OR_RETURN_IMPL_(GYRE_STATUS_CONCAT_(gyre_statusor_, __LINE__), lhs, expr)

#define GYRE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // GYRE_CONCURRENT_INTERNAL_STATUS_MACROS_H_
