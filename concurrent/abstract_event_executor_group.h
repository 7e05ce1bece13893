// AbstractEventExecutorGroup: the base for groups whose submissions go to Next().
//
//   class MyGroup : public AbstractEventExecutorGroup { ... EventExecutor* NextExecutor() override; };
//
// Thread safety: as EventExecutorGroup (every method thread-safe).
#ifndef GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_GROUP_H_
#define GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_GROUP_H_

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/event_executor_group.h"

namespace gyre {

// Execute, Submit and the Schedule family are EventExecutorGroup's, and all delegate to
// Next(). This class adds the argument check every ShutdownGracefully shares.
class AbstractEventExecutorGroup : public virtual EventExecutorGroup {
 public:
  // InvalidArgument when a duration is negative or quiet_period > timeout; else OK.
  static absl::Status ValidateShutdownArguments(absl::Duration quiet_period,
                                                absl::Duration timeout);
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_ABSTRACT_EVENT_EXECUTOR_GROUP_H_
