// GYRE_RETURN_IF_ERROR / GYRE_ASSIGN_OR_RETURN (this Abseil has no status macros).
//
//   GYRE_RETURN_IF_ERROR(Validate(options));
//   GYRE_ASSIGN_OR_RETURN(auto group, DefaultEventExecutorGroup::Create(4));
//
// Thread safety: macros only.
#ifndef GYRE_CONCURRENT_INTERNAL_STATUS_MACROS_H_
#define GYRE_CONCURRENT_INTERNAL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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
