#include "gyre/concurrent/internal/scheduled_task.h"

#include <algorithm>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"

namespace gyre {
namespace internal {
namespace {

constexpr int kSlotMask = ScheduledTaskHeap::kWheelSlots - 1;
constexpr int kWords = ScheduledTaskHeap::kWheelSlots / 64;

void ClearWheelLinks(ScheduledTask* t) {
  t->heap_index = -1;
  t->wheel_entry = nullptr;
}

}  // namespace

ScheduledTaskHeap::~ScheduledTaskHeap() {
  for (Entry& e : heap_) {
    e.task->heap_index = -1;
    e.task->Unref();
  }
  if (wheel_count_ == 0) return;
  for (Bucket& b : wheel_->bucket) {
    uint32_t n = b.used();
    Chunk* c = b.tail();
    b.Set(nullptr, 0);
    for (; c != nullptr; c = c->prev) {
      for (uint32_t i = 0; i < n; ++i) {
        if (ScheduledTask* t = c->entry[i]) {
          ClearWheelLinks(t);
          t->Unref();
        }
      }
      n = kChunkEntries;
    }
  }
  // The slabs go with slabs_.
}

void ScheduledTaskHeap::PushSlow(ScheduledTask* t) {
  if (!WheelInsert(t)) HeapPush(t);
  Settle();
}

ScheduledTaskRef ScheduledTaskHeap::Pop() {
  if (heap_.empty()) return ScheduledTaskRef();
  ScheduledTaskRef r = HeapRemove(heap_[0].task);
  Settle();
  return r;
}

ScheduledTaskRef ScheduledTaskHeap::Remove(ScheduledTask* task) {
  if (task->heap_index == ScheduledTask::kInWheel) {
    WheelUnlink(task);  // the earliest bucket can only get later: the invariant holds
    return ScheduledTaskRef(task);
  }
  ScheduledTaskRef r = HeapRemove(task);
  if (r) Settle();
  return r;
}

size_t ScheduledTaskHeap::RemoveDone() {
  size_t removed = 0;
  for (int w = 0; wheel_count_ != 0 && w < kWords; ++w) {
    for (uint64_t bits = wheel_->bits[w]; bits != 0; bits &= bits - 1) {
      const int slot = w * 64 + __builtin_ctzll(bits);
      Bucket& b = wheel_->bucket[slot];
      uint32_t n = b.used();
      for (Chunk* c = b.tail(); c != nullptr; n = kChunkEntries) {
        Chunk* const prev = c->prev;
        for (uint32_t i = 0; i < n; ++i) {
          ScheduledTask* t = c->entry[i];
          if (t == nullptr || !t->IsTaskDone()) continue;
          const bool last = c->removed + 1 == n;  // its removal frees the chunk
          WheelUnlink(t);
          t->DestroyBody();
          t->Unref();
          ++removed;
          if (last) break;
        }
        c = prev;
      }
    }
  }
  return removed + RemoveDoneFromHeap();
}

size_t ScheduledTaskHeap::RemoveDoneFromHeap() {
  size_t removed = 0;
  size_t kept = 0;
  bool heap_changed = false;
  for (size_t i = 0; i < heap_.size(); ++i) {
    Entry e = heap_[i];
    if (e.task->IsTaskDone()) {
      e.task->heap_index = -1;
      e.task->DestroyBody();
      e.task->Unref();
      ++removed;
      heap_changed = true;
    } else {
      heap_[kept++] = e;
    }
  }
  heap_.resize(kept);
  if (heap_changed) {
    // Floyd's bottom-up construction: O(n).
    for (size_t i = kept / 2; i-- > 0;) SiftDown(i);
    for (size_t i = 0; i < kept; ++i) heap_[i].task->heap_index = static_cast<int32_t>(i);
  }
  Settle();
  return removed;
}

void ScheduledTaskHeap::HeapPush(ScheduledTask* t) {
  heap_.push_back(Entry{t->deadline_nanos(), t->seq, t});
  t->heap_index = static_cast<int32_t>(heap_.size() - 1);
  SiftUp(heap_.size() - 1);
}

ScheduledTaskRef ScheduledTaskHeap::HeapRemove(ScheduledTask* task) {
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

bool ScheduledTaskHeap::WheelInsert(ScheduledTask* t) {
  const int64_t d = t->deadline_nanos();
  if (d > INT64_MAX - kWheelSpanNanos) return false;  // saturated: the heap keeps it
  if (wheel_count_ == 0) {
    // Anchor the window at this timer's bucket, unless the timer would be the earliest
    // of all (its bucket would move to the heap at once).
    const int64_t start = d & ~(kBucketNanos - 1);  // floor, negative values too
    if (heap_.empty() || start <= heap_[0].deadline) return false;
    base_ = start;
    origin_ = 0;
  } else if (d < base_) {
    // Earlier than the window: move the window back to this timer's bucket if the
    // latest timer in the wheel stays inside it. The slots that become the window's
    // first buckets were its last ones, empty: no timer changes slot.
    const int64_t start = d & ~(kBucketNanos - 1);
    if (static_cast<uint64_t>(wheel_max_deadline_) - static_cast<uint64_t>(start) >=
        static_cast<uint64_t>(kWheelSpanNanos)) {
      return false;
    }
    const int back = static_cast<int>(
        (static_cast<uint64_t>(base_) - static_cast<uint64_t>(start)) >> kBucketShift);
    base_ = start;
    origin_ = (origin_ - back) & kSlotMask;
  } else if (static_cast<uint64_t>(d) - static_cast<uint64_t>(base_) >=
             static_cast<uint64_t>(kWheelSpanNanos)) {
    return false;
  }
  if (wheel_ == nullptr) wheel_ = std::make_unique<Wheel>();
  const int k = static_cast<int>((static_cast<uint64_t>(d) - static_cast<uint64_t>(base_)) >>
                                 kBucketShift);
  const int slot = (origin_ + k) & kSlotMask;
  AppendToBucket(t, slot);
  if (wheel_count_++ == 0 || d > wheel_max_deadline_) wheel_max_deadline_ = d;
  if (earliest_ < 0 || k < ((earliest_ - origin_) & kSlotMask)) earliest_ = slot;
  return true;
}

void ScheduledTaskHeap::WheelUnlink(ScheduledTask* t) {
  const int k = static_cast<int>(
      (static_cast<uint64_t>(t->deadline_nanos()) - static_cast<uint64_t>(base_)) >> kBucketShift);
  const int slot = (origin_ + k) & kSlotMask;
  ScheduledTask** entry = t->wheel_entry;
  Chunk* c = ChunkOf(entry);
  *entry = nullptr;
  ClearWheelLinks(t);
  --wheel_count_;
  Bucket& b = wheel_->bucket[slot];
  const uint32_t filled = c == b.tail() ? b.used() : kChunkEntries;
  if (ABSL_PREDICT_FALSE(++c->removed == filled)) ChunkEmptied(slot, c);
}

ScheduledTaskHeap::Chunk* ScheduledTaskHeap::StartChunk(int slot, Chunk* tail) {
  Chunk* fresh = NewChunk();
  fresh->prev = tail;
  fresh->next = nullptr;
  fresh->removed = 0;
  if (tail != nullptr) {
    tail->next = fresh;
  } else {
    wheel_->bits[slot >> 6] |= uint64_t{1} << (slot & 63);
  }
  return fresh;
}

void ScheduledTaskHeap::ChunkEmptied(int slot, Chunk* c) {
  Bucket& b = wheel_->bucket[slot];
  DropChunk(b, c);
  if (b.tail() == nullptr) {
    wheel_->bits[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    if (slot == earliest_) earliest_ = wheel_count_ == 0 ? -1 : FindNonEmpty(slot);
  }
  if (wheel_count_ == 0) ReleaseSlabs();
}

void ScheduledTaskHeap::DropChunk(Bucket& b, Chunk* c) {
  if (c == b.tail()) {
    b.Set(c->prev, c->prev != nullptr ? kChunkEntries : 0);  // an older chunk is full
  } else {
    c->next->prev = c->prev;
  }
  if (c->prev != nullptr) c->prev->next = c->next;
  free_chunks_.push_back(c);  // capacity reserved: no alloc
}

ScheduledTaskHeap::Chunk* ScheduledTaskHeap::NewChunk() {
  if (!free_chunks_.empty()) {
    Chunk* c = free_chunks_.back();
    free_chunks_.pop_back();
    return c;
  }
  if (fresh_ == fresh_end_) {
    // Throws std::bad_alloc as operator new does (the timer is not queued then). Both
    // arrays grow geometrically: a slab is amortized O(1).
    const size_t chunks = (slabs_.size() + 1) * kChunksPerSlab;
    if (free_chunks_.capacity() < chunks) {
      free_chunks_.reserve(std::max(chunks, 2 * free_chunks_.capacity()));
    }
    std::unique_ptr<Chunk[]> slab(new Chunk[kChunksPerSlab]);
    slabs_.push_back(std::move(slab));
    fresh_ = slabs_.back().get();
    fresh_end_ = fresh_ + kChunksPerSlab;
  }
  return fresh_++;
}

void ScheduledTaskHeap::ReleaseSlabs() {
  // Every chunk is free: start again from the first slab's.
  slabs_.resize(1);
  if (free_chunks_.capacity() > kChunksPerSlab) {
    std::vector<Chunk*>().swap(free_chunks_);
    free_chunks_.reserve(kChunksPerSlab);
  }
  free_chunks_.clear();
  fresh_ = slabs_.front().get();
  fresh_end_ = fresh_ + kChunksPerSlab;
}

int ScheduledTaskHeap::FindNonEmpty(int slot) const {
  int w = slot >> 6;
  uint64_t word = wheel_->bits[w] & (~uint64_t{0} << (slot & 63));
  for (int i = 0; i <= kWords; ++i) {
    if (word != 0) return w * 64 + __builtin_ctzll(word);
    w = (w + 1) & (kWords - 1);
    word = wheel_->bits[w];
  }
  return -1;
}

void ScheduledTaskHeap::Settle() {
  while (wheel_count_ != 0 && (heap_.empty() || heap_[0].deadline >= EarliestBucketStart())) {
    MigrateEarliest();
  }
}

void ScheduledTaskHeap::MigrateEarliest() {
  const int slot = earliest_;
  const int64_t start = EarliestBucketStart();
  Bucket& b = wheel_->bucket[slot];
  uint32_t n = b.used();
  Chunk* c = b.tail();
  b.Set(nullptr, 0);
  for (; c != nullptr; n = kChunkEntries) {
    for (uint32_t i = 0; i < n; ++i) {
      if (ScheduledTask* t = c->entry[i]) {
        ClearWheelLinks(t);
        --wheel_count_;
        HeapPush(t);
      }
    }
    Chunk* const prev = c->prev;
    free_chunks_.push_back(c);  // capacity reserved: no alloc
    c = prev;
  }
  wheel_->bits[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
  base_ = start + kBucketNanos;
  origin_ = (slot + 1) & kSlotMask;
  earliest_ = wheel_count_ == 0 ? -1 : FindNonEmpty(origin_);
  if (wheel_count_ == 0) ReleaseSlabs();
}

}  // namespace internal
}  // namespace gyre
