// Choosers: how a group picks the executor Next() returns.
//
//   std::unique_ptr<EventExecutorChooser> chooser =
//       DefaultEventExecutorChooserFactory::Instance()->NewChooser(executors);
//   EventExecutor* e = chooser->Next();          // round-robin
//
// Thread safety: Next() is thread-safe; factories are thread-safe.
#ifndef GYRE_CONCURRENT_EVENT_EXECUTOR_CHOOSER_H_
#define GYRE_CONCURRENT_EVENT_EXECUTOR_CHOOSER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace gyre {

class EventExecutor;

// Picks one executor per call. Implementations must be thread-safe and must only return
// members of the vector they were built with.
class EventExecutorChooser {
 public:
  virtual ~EventExecutorChooser() = default;
  virtual EventExecutor* Next() = 0;
};

class EventExecutorChooserFactory {
 public:
  virtual ~EventExecutorChooserFactory() = default;
  // `executors` is non-empty (the group checks).
  virtual std::unique_ptr<EventExecutorChooser> NewChooser(std::vector<EventExecutor*> executors) = 0;
};

// Round-robin with a mask; for a power-of-two count. The 64-bit counter wraps at a
// multiple of the count, so the order stays round-robin across the wrap.
class PowerOfTwoEventExecutorChooser final : public EventExecutorChooser {
 public:
  // `start` is the counter's first value (tests use it to reach the wrap).
  explicit PowerOfTwoEventExecutorChooser(std::vector<EventExecutor*> executors,
                                          uint64_t start = 0);
  EventExecutor* Next() override;

 private:
  const std::vector<EventExecutor*> executors_;
  const uint64_t mask_;
  // Relaxed: only the atomicity of the increment matters, not ordering.
  std::atomic<uint64_t> index_;
};

// Round-robin with a modulo; for any count. Always in range; at the 64-bit wrap (after
// 2^64 calls) the order skips at most once.
class GenericEventExecutorChooser final : public EventExecutorChooser {
 public:
  explicit GenericEventExecutorChooser(std::vector<EventExecutor*> executors, uint64_t start = 0);
  EventExecutor* Next() override;

 private:
  const std::vector<EventExecutor*> executors_;
  // Relaxed: as above.
  std::atomic<uint64_t> index_;
};

// Power-of-two counts get the mask chooser, others the modulo chooser.
class DefaultEventExecutorChooserFactory final : public EventExecutorChooserFactory {
 public:
  static DefaultEventExecutorChooserFactory* Instance();
  std::unique_ptr<EventExecutorChooser> NewChooser(std::vector<EventExecutor*> executors) override;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_EVENT_EXECUTOR_CHOOSER_H_
