// A FIFO of tasks confined to one thread: the loop's queue for tasks it submits to
// itself. A growable power-of-two ring; no atomics, no per-task allocation once warm.
//
// A task is built where it will run: Emplace constructs the invocable in its slot
// (from a callable, with no type-erased move in between), and RunFront runs it there
// and destroys it there. A task that has just been built holds its captures in stores
// the CPU may not have written back yet; moving it (a 16-byte load over 8-byte stores)
// then stalls on store forwarding, and each move and destruction of a type-erased task
// is an indirect call. The in-place path has neither.
//
// While RunFront runs a task, that task may Emplace more (and so make the ring grow):
// its slot is never reused before it returns (Emplace counts it as occupied), and if
// the ring grows the old array, where the running task lies, is kept until it returns.
// A RunFront nested in a running task (a task that runs the loop's tasks itself) moves
// its task out and runs the copy.
//
// Thread safety: none; one thread (the loop) only.
// Ownership: owns the queued tasks; destroying the ring destroys them unrun. It must not
// be destroyed from inside RunFront.
#ifndef GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_
#define GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_

#include <cstddef>
#include <memory>
#include <new>
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
  ~LocalTaskRing() {
    for (size_t i = head_; i != tail_; ++i) At(i)->~Task();
  }

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }

  // Queues a task built from `fn` (a callable, or a Task to move from).
  template <typename F>
  void Emplace(F&& fn) {
    // The slot of a task RunFront is running stays taken until it returns.
    const size_t first = running_ ? running_index_ : head_;
    if (tail_ - first == capacity_) Grow();
    ::new (static_cast<void*>(At(tail_))) Task(std::forward<F>(fn));
    ++tail_;
  }
  void Push(Task&& task) { Emplace(std::move(task)); }

  // Precondition: !empty(). Moves the front task out.
  Task Pop() {
    Task* slot = At(head_);
    Task task = std::move(*slot);
    slot->~Task();
    ++head_;
    return task;
  }

  // Precondition: !empty(). Calls run(Task&) on the front task where it lies, then
  // destroys it. `run` must not throw.
  template <typename Run>
  void RunFront(Run&& run) {
    if (running_) {  // nested in a running task: its slot must stay put
      Task task = Pop();
      run(task);
      return;
    }
    Task* task = At(head_);
    running_ = true;
    running_index_ = head_++;
    run(*task);
    task->~Task();  // still valid: if the ring grew, its array is in retired_
    running_ = false;
    retired_.reset();
  }

 private:
  struct alignas(Task) Slot {
    unsigned char bytes[sizeof(Task)];
  };

  static Task* SlotIn(Slot* slots, size_t capacity, size_t index) {
    return std::launder(reinterpret_cast<Task*>(slots[index & (capacity - 1)].bytes));
  }
  Task* At(size_t index) const { return SlotIn(slots_.get(), capacity_, index); }

  void Grow() {
    const size_t capacity = capacity_ == 0 ? 64 : capacity_ * 2;
    auto slots = std::make_unique<Slot[]>(capacity);
    // Indices stay as they are; only the mask changes (capacity doubles, so the
    // occupied range still maps to distinct slots).
    for (size_t i = head_; i != tail_; ++i) {
      Task* from = At(i);
      ::new (static_cast<void*>(SlotIn(slots.get(), capacity, i))) Task(std::move(*from));
      from->~Task();
    }
    // The running task stays in the array it runs from; an array grown out of later in
    // the same run holds no task and can go now.
    if (running_ && retired_ == nullptr) retired_ = std::move(slots_);
    slots_ = std::move(slots);
    capacity_ = capacity;
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;
  size_t head_ = 0;  // monotonically increasing indices; slot = index & (capacity - 1)
  size_t tail_ = 0;
  // RunFront's task: running_index_ is its index (head_ has moved past it).
  bool running_ = false;
  size_t running_index_ = 0;
  // The array the running task lies in, once the ring has grown out of it.
  std::unique_ptr<Slot[]> retired_;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_LOCAL_TASK_RING_H_
