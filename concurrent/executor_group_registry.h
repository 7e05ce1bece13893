// ExecutorGroupRegistry: the process-wide list of live, named executor groups, for the
// admin service.
//
//   GroupOptions o; o.name = "workers";
//   auto group = DefaultEventExecutorGroup::Create(4, o).value();   // registered
//   std::vector<GroupSnapshot> all = ExecutorGroupRegistry::Global().Snapshots();
//   group.reset();                                                 // unregistered
//
// Groups register themselves in Create when given a non-empty name and unregister in
// their destructor. Names need not be unique.
//
// Thread safety: thread-safe. Snapshots are taken under the registry's lock, which
// only gyre code runs under (a group's destructor waits for a snapshot in progress).
#ifndef GYRE_CONCURRENT_EXECUTOR_GROUP_REGISTRY_H_
#define GYRE_CONCURRENT_EXECUTOR_GROUP_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/concurrent/future.h"
#include "gyre/concurrent/internal/mutex.h"

namespace gyre {

class MultithreadEventExecutorGroup;
struct GroupSnapshot;

class ExecutorGroupRegistry {
 public:
  // The process-wide registry (never destroyed).
  static ExecutorGroupRegistry& Global();

  ExecutorGroupRegistry() = default;
  ExecutorGroupRegistry(const ExecutorGroupRegistry&) = delete;
  ExecutorGroupRegistry& operator=(const ExecutorGroupRegistry&) = delete;

  void Register(MultithreadEventExecutorGroup* group);
  void Unregister(MultithreadEventExecutorGroup* group);

  // Names of the live named groups, in registration order.
  std::vector<std::string> Names() const;
  // One snapshot per live named group, in registration order.
  std::vector<GroupSnapshot> Snapshots() const;
  // Starts graceful shutdown of every live group named `name`. NotFound if none.
  // Shutdown hooks of executors that never started run on this thread, under the
  // registry's lock: such hooks must not call the registry.
  absl::Status ShutdownGracefully(const std::string& name, absl::Duration quiet_period,
                                  absl::Duration timeout);
  // The termination futures of the live groups named `name` (empty if none). The
  // futures stay valid after their groups are destroyed.
  std::vector<Future<void>> TerminationFutures(const std::string& name) const;

 private:
  mutable internal::Mutex mu_;
  std::vector<MultithreadEventExecutorGroup*> groups_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EXECUTOR_GROUP_REGISTRY_H_
