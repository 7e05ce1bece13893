#include "gyre/concurrent/executor_group_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/multithread_event_executor_group.h"

namespace gyre {

ExecutorGroupRegistry& ExecutorGroupRegistry::Global() {
  static ExecutorGroupRegistry* const registry = new ExecutorGroupRegistry();
  return *registry;
}

void ExecutorGroupRegistry::Register(MultithreadEventExecutorGroup* group) {
  internal::MutexLock lock(&mu_);
  groups_.push_back(group);
}

void ExecutorGroupRegistry::Unregister(MultithreadEventExecutorGroup* group) {
  internal::MutexLock lock(&mu_);
  groups_.erase(std::remove(groups_.begin(), groups_.end(), group), groups_.end());
}

std::vector<std::string> ExecutorGroupRegistry::Names() const {
  internal::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (auto* g : groups_) names.push_back(g->name());
  return names;
}

std::vector<GroupSnapshot> ExecutorGroupRegistry::Snapshots() const {
  internal::MutexLock lock(&mu_);
  std::vector<GroupSnapshot> out;
  for (auto* g : groups_) out.push_back(g->Snapshot());
  return out;
}

std::vector<Future<void>> ExecutorGroupRegistry::TerminationFutures(
    const std::string& name) const {
  internal::MutexLock lock(&mu_);
  std::vector<Future<void>> out;
  for (auto* g : groups_) {
    if (g->name() == name) out.push_back(g->TerminationFuture());
  }
  return out;
}

absl::Status ExecutorGroupRegistry::ShutdownGracefully(const std::string& name,
                                                       absl::Duration quiet_period,
                                                       absl::Duration timeout) {
  internal::MutexLock lock(&mu_);
  bool found = false;
  for (auto* g : groups_) {
    if (g->name() != name) continue;
    found = true;
    // Under the lock so the group cannot be destroyed meanwhile. A child that never
    // started runs its shutdown hooks right here; those hooks must not use the registry.
    g->ShutdownGracefully(quiet_period, timeout);
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no executor group named \"", name, "\""));
  return absl::OkStatus();
}

}  // namespace gyre
