#include "gyre/concurrent/loop_affinity.h"

#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {

void LoopAffinity::CheckOnLoop() const {
  const EventExecutor* owner = owner_.load(std::memory_order_relaxed);
  GYRE_CHECK(owner == nullptr || owner->InEventLoop())
      << "loop-confined state touched off its event loop's thread";
}

}  // namespace gyre
