// A FIFO of tasks confined to one thread: the loop's queue for tasks it submits to
// itself. A growable power-of-two ring; no atomics, no per-task allocation once warm.
//
// Thread safety: none; one thread (the loop) only.
// Ownership: owns the queued tasks; destroying the ring destroys them unrun.
#ifndef GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_
#define GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_

#include <cstddef>
#include <memory>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace gyre {
namespace internal {

class LocalTaskRing {
 public:
  using Task = absl::AnyInvocable<void()>;

  LocalTaskRing() = default;
  LocalTaskRing(const LocalTaskRing&) = delete;
  LocalTaskRing& operator=(const LocalTaskRing&) = delete;

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }

  void Push(Task&& task) {
    if (tail_ - head_ == capacity_) Grow();
    slots_[tail_ & (capacity_ - 1)] = std::move(task);
    ++tail_;
  }

  // Precondition: !empty().
  Task Pop() {
    Task& slot = slots_[head_ & (capacity_ - 1)];
    Task task = std::move(slot);
    slot = nullptr;
    ++head_;
    return task;
  }

 private:
  void Grow() {
    size_t capacity = capacity_ == 0 ? 64 : capacity_ * 2;
    auto slots = std::make_unique<Task[]>(capacity);
    size_t n = tail_ - head_;
    for (size_t i = 0; i < n; ++i) {
      slots[i] = std::move(slots_[(head_ + i) & (capacity_ - 1)]);
    }
    slots_ = std::move(slots);
    capacity_ = capacity;
    head_ = 0;
    tail_ = n;
  }

  std::unique_ptr<Task[]> slots_;
  size_t capacity_ = 0;
  size_t head_ = 0;  // monotonically increasing indices; slot = index & (capacity - 1)
  size_t tail_ = 0;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_
