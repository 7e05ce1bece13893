#include "gyre/concurrent/internal/scheduled_task.h"

namespace gyre {
namespace internal {

ScheduledTaskHeap::~ScheduledTaskHeap() {
  for (Entry& e : heap_) {
    e.task->heap_index = -1;
    e.task->Unref();
  }
}

void ScheduledTaskHeap::Push(ScheduledTaskRef task) {
  ScheduledTask* t = task.release();
  heap_.push_back(Entry{t->deadline_nanos(), next_seq_++, t});
  t->heap_index = static_cast<int64_t>(heap_.size() - 1);
  SiftUp(heap_.size() - 1);
}

ScheduledTaskRef ScheduledTaskHeap::Pop() {
  if (heap_.empty()) return ScheduledTaskRef();
  return Remove(heap_[0].task);
}

ScheduledTaskRef ScheduledTaskHeap::Remove(ScheduledTask* task) {
  int64_t i = task->heap_index;
  if (i < 0 || static_cast<size_t>(i) >= heap_.size() || heap_[i].task != task) {
    return ScheduledTaskRef();
  }
  Entry last = heap_.back();
  heap_.pop_back();
  task->heap_index = -1;
  if (last.task != task) {
    Place(static_cast<size_t>(i), last);
    SiftUp(static_cast<size_t>(i));
    SiftDown(static_cast<size_t>(last.task->heap_index));
  }
  return ScheduledTaskRef(task);
}

size_t ScheduledTaskHeap::RemoveDone() {
  size_t kept = 0;
  size_t removed = 0;
  for (size_t i = 0; i < heap_.size(); ++i) {
    Entry e = heap_[i];
    if (e.task->IsTaskDone()) {
      e.task->heap_index = -1;
      e.task->DestroyBody();
      e.task->Unref();
      ++removed;
    } else {
      heap_[kept++] = e;
    }
  }
  heap_.resize(kept);
  if (removed != 0) {
    // Floyd's bottom-up construction: O(n).
    for (size_t i = kept / 2; i-- > 0;) SiftDown(i);
    for (size_t i = 0; i < kept; ++i) heap_[i].task->heap_index = static_cast<int64_t>(i);
  }
  return removed;
}

void ScheduledTaskHeap::SiftUp(size_t i) {
  Entry e = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!Less(e, heap_[parent])) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, e);
}

void ScheduledTaskHeap::SiftDown(size_t i) {
  size_t n = heap_.size();
  Entry e = heap_[i];
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && Less(heap_[child + 1], heap_[child])) ++child;
    if (!Less(heap_[child], e)) break;
    Place(i, heap_[child]);
    i = child;
  }
  Place(i, e);
}

}  // namespace internal
}  // namespace gyre
