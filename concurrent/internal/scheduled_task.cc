#include "gyre/concurrent/internal/scheduled_task.h"

namespace gyre {
namespace internal {

ScheduledTaskHeap::~ScheduledTaskHeap() {
  for (ScheduledTask* t : heap_) {
    t->heap_index = -1;
    t->Unref();
  }
}

void ScheduledTaskHeap::Push(ScheduledTaskRef task) {
  ScheduledTask* t = task.release();
  t->seq = next_seq_++;
  heap_.push_back(t);
  t->heap_index = static_cast<int64_t>(heap_.size() - 1);
  SiftUp(heap_.size() - 1);
}

ScheduledTaskRef ScheduledTaskHeap::Pop() {
  if (heap_.empty()) return ScheduledTaskRef();
  return Remove(heap_[0]);
}

ScheduledTaskRef ScheduledTaskHeap::Remove(ScheduledTask* task) {
  int64_t i = task->heap_index;
  if (i < 0 || static_cast<size_t>(i) >= heap_.size() || heap_[i] != task) {
    return ScheduledTaskRef();
  }
  ScheduledTask* last = heap_.back();
  heap_.pop_back();
  task->heap_index = -1;
  if (last != task) {
    Place(static_cast<size_t>(i), last);
    SiftUp(static_cast<size_t>(i));
    SiftDown(static_cast<size_t>(last->heap_index));
  }
  return ScheduledTaskRef(task);
}

void ScheduledTaskHeap::SiftUp(size_t i) {
  ScheduledTask* t = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!Less(t, heap_[parent])) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, t);
}

void ScheduledTaskHeap::SiftDown(size_t i) {
  size_t n = heap_.size();
  ScheduledTask* t = heap_[i];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Less(heap_[child + 1], heap_[child])) ++child;
    if (!Less(heap_[child], t)) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, t);
}

}  // namespace internal
}  // namespace gyre
