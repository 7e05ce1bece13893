// The state of one scheduled task: a FutureCore (so the user's ScheduledFuture is its
// future) plus what the executor's timer heap needs.
//
// Lifespan: the user's ScheduledFuture holds one reference; the executor holds one while
// the task is queued for insertion or sits in its heap. Cancel() from any thread calls
// OnCancelled(), which asks the host executor to drop the task from its heap: at once on
// the loop thread, else through a (non-waking) task. So a cancelled timer is freed long
// before its deadline. The body is destroyed on the loop when the task leaves the heap.
//
// Thread safety: Ref/Unref/Cancel from any thread; heap fields and RunOnLoop are
// loop-confined.
#ifndef GYRE_CONCURRENT_INTERNAL_SCHEDULED_TASK_H_
#define GYRE_CONCURRENT_INTERNAL_SCHEDULED_TASK_H_

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "gyre/concurrent/internal/future_core.h"
#include "gyre/concurrent/internal/timer_arena.h"

namespace gyre {

class Ticker;

namespace internal {

class ScheduledTask;

// Implemented by executors that keep scheduled tasks.
class ScheduledTaskHost {
 public:
  virtual ~ScheduledTaskHost() = default;
  // `task` was cancelled (on any thread); remove it from the heap if it is there.
  virtual void OnScheduledTaskCancelled(ScheduledTask* task) = 0;
};

class ScheduledTask {
 public:
  enum class Kind : uint8_t { kOnce, kFixedRate, kFixedDelay };

  ScheduledTask(Kind kind, int64_t period_nanos) : kind_(kind), period_nanos_(period_nanos) {}
  ScheduledTask(const ScheduledTask&) = delete;
  ScheduledTask& operator=(const ScheduledTask&) = delete;

  virtual void Ref() = 0;
  virtual void Unref() = 0;
  // Runs the body on the loop. Returns true when a periodic task must run again.
  virtual bool RunOnLoop() = 0;
  // Completes the future as cancelled without calling back into the host.
  virtual void CancelDetached() = 0;
  // Completes the future as failed (rejected); the host is not told.
  virtual void FailDetached(absl::Status status) = 0;
  virtual bool IsTaskDone() const = 0;
  // Destroys the body (loop thread; after the task left the heap for good).
  virtual void DestroyBody() = 0;

  Kind kind() const { return kind_; }
  int64_t period_nanos() const { return period_nanos_; }

  int64_t deadline_nanos() const {
    // Relaxed: a plain value read by Deadline(); no other data hangs on it.
    return deadline_nanos_.load(std::memory_order_relaxed);
  }
  void set_deadline_nanos(int64_t d) { deadline_nanos_.store(d, std::memory_order_relaxed); }

  const Ticker* ticker() const { return ticker_; }
  void set_ticker(const Ticker* t) { ticker_ = t; }

  void set_host(ScheduledTaskHost* host) {
    // Release/acquire with OnCancelled's load: the host pointer is published once.
    host_.store(host, std::memory_order_release);
  }

  // Loop-confined queue bookkeeping (ScheduledTaskHeap): the tie-break sequence number,
  // the entry of a wheel bucket's chunk that holds this timer, and `heap_index` below.
  uint64_t seq = 0;
  union {
    ScheduledTask** wheel_entry = nullptr;
    // The link of the executor's lock-free stack of timers scheduled from other threads:
    // written by the pushing thread before its release CAS, read (and cleared) by the
    // loop after its acquire exchange, before the timer enters the queue. It shares its
    // word with wheel_entry, which is only used once the timer is in the queue.
    ScheduledTask* incoming_next;
  };
  // The link of the stack of timers cancelled from other threads (as incoming_next; a
  // timer may be on it while it still sits in the queue).
  ScheduledTask* cancelled_next = nullptr;
  // The index in the heap array, or kInWheel while in a wheel bucket, or -1 when in
  // neither. 32 bits: a heap of 2^31 timers would take half a terabyte. With in_arena_
  // and kind_ in one word.
  static constexpr int32_t kInWheel = -2;
  int32_t heap_index = -1;

 protected:
  ~ScheduledTask() = default;

  // The state lives in a block of a TimerArena (not in the heap).
  bool in_arena_ = false;
  // The body is constructed and not yet destroyed (ScheduledTaskCore).
  bool body_alive_ = false;

 private:
  const Kind kind_;

 protected:
  void NotifyHostCancelled() {
    ScheduledTaskHost* host = host_.load(std::memory_order_acquire);
    if (host != nullptr) host->OnScheduledTaskCancelled(this);
  }

 private:
  const int64_t period_nanos_;
  std::atomic<int64_t> deadline_nanos_{0};
  const Ticker* ticker_ = nullptr;
  std::atomic<ScheduledTaskHost*> host_{nullptr};
};

// A scheduled task whose body is F and whose result is T.
template <typename T, typename F>
class ScheduledTaskCore final : public FutureCore<T>, public ScheduledTask {
 public:
  // Starts with two references: the user's future's and the executor's.
  ScheduledTaskCore(EventExecutor* executor, F fn, Kind kind, int64_t period_nanos)
      : FutureCore<T>(executor, /*initial_refs=*/2), ScheduledTask(kind, period_nanos) {
    ::new (fn_.get()) F(std::move(fn));
    body_alive_ = true;
  }

  // A new task in the calling loop thread's TimerArena, or on the heap on other threads
  // (and for bodies too large for the arena).
  template <typename Fn>
  static ScheduledTaskCore* Create(EventExecutor* executor, Fn&& fn, Kind kind,
                                   int64_t period_nanos) {
#if GYRE_TIMER_ARENA
    if (TimerArena* arena = tls_timer_arena) {
      if (void* mem = arena->Allocate(sizeof(ScheduledTaskCore))) {
        ScheduledTaskCore* core;
        try {
          core = ::new (mem) ScheduledTaskCore(executor, std::forward<Fn>(fn), kind, period_nanos);
        } catch (...) {
          TimerArena::Free(mem);
          throw;
        }
        core->in_arena_ = true;
        return core;
      }
    }
#endif
    return new ScheduledTaskCore(executor, std::forward<Fn>(fn), kind, period_nanos);
  }

  void Ref() override { this->AddRef(); }
  void Unref() override { this->Release(); }

  bool RunOnLoop() override {
    if (kind() == Kind::kOnce) {
      if (!this->SetUncancellable()) return false;  // cancelled meanwhile
      try {
        if constexpr (std::is_void_v<T>) {
          body()();
          this->TrySuccess();
        } else {
          this->TrySuccess(body()());
        }
      } catch (const std::exception& e) {
        this->TryFailure(absl::InternalError(e.what()));
      } catch (...) {
        this->TryFailure(absl::InternalError("scheduled task threw a non-std exception"));
      }
      return false;
    }
    if (this->IsDone()) return false;
    try {
      body()();
    } catch (const std::exception& e) {
      this->TryFailure(absl::InternalError(e.what()));
      return false;
    } catch (...) {
      this->TryFailure(absl::InternalError("periodic task threw a non-std exception"));
      return false;
    }
    return !this->IsDone();
  }

  void CancelDetached() override {
    set_host(nullptr);
    this->Cancel();
  }
  void FailDetached(absl::Status status) override {
    set_host(nullptr);
    this->TryFailure(std::move(status));
  }
  bool IsTaskDone() const override { return this->IsDone(); }
  void DestroyBody() override {
    if (body_alive_) {
      body_alive_ = false;
      body().~F();
    }
  }

 protected:
  void OnCancelled() override { NotifyHostCancelled(); }

 private:
  ~ScheduledTaskCore() override {
    if (body_alive_) body().~F();
  }

  F& body() { return *std::launder(static_cast<F*>(fn_.get())); }

  void DeleteThis() override {
    if (in_arena_) {
      void* block = this;
      this->ScheduledTaskCore::~ScheduledTaskCore();
      TimerArena::Free(block);
      return;
    }
    delete this;
  }

  // The body, alive while body_alive_ (no bytes at all for a capture-less lambda).
  [[no_unique_address]] RawStorage<F> fn_;
};

// An owning reference to a ScheduledTask.
class ScheduledTaskRef {
 public:
  ScheduledTaskRef() = default;
  // Adopts one reference.
  explicit ScheduledTaskRef(ScheduledTask* task) : task_(task) {}
  ScheduledTaskRef(ScheduledTaskRef&& other) noexcept : task_(std::exchange(other.task_, nullptr)) {}
  ScheduledTaskRef& operator=(ScheduledTaskRef&& other) noexcept {
    if (this != &other) {
      reset();
      task_ = std::exchange(other.task_, nullptr);
    }
    return *this;
  }
  ~ScheduledTaskRef() { reset(); }
  ScheduledTask* get() const { return task_; }
  ScheduledTask* operator->() const { return task_; }
  explicit operator bool() const { return task_ != nullptr; }
  ScheduledTask* release() { return std::exchange(task_, nullptr); }
  void reset() {
    if (task_ != nullptr) std::exchange(task_, nullptr)->Unref();
  }

 private:
  ScheduledTask* task_ = nullptr;
};

// The loop's timer queue: a binary min-heap on (deadline, seq) for the timers due
// soonest, and a wheel of buckets for the later ones, so that scheduling and cancelling
// a far timer (an idle or request timeout, almost always cancelled) are O(1) and touch
// no other timer's memory.
//
// The wheel has kWheelSlots buckets of kBucketNanos each, covering [base, base + span)
// with base aligned to a bucket. A timer whose deadline falls in that window goes to its
// bucket; an earlier one moves the window back to its bucket when the wheel's latest
// timer stays inside; any other (and any while the wheel is empty and the timer would be
// the earliest) goes to the heap. A bucket is an unordered list of chunks of one cache
// line each, holding kChunkEntries timers: a timer knows its entry, so removing it nulls
// that entry and touches no other timer's memory (an intrusive list would write into a
// neighbour timer on every removal, a cache miss each with many timers alive); a chunk
// whose timers are all gone leaves the list. Chunks come from 16 KiB slabs the queue
// keeps; all but the first are released whenever the wheel empties. (Between those
// times the chunks held follow the most timers the wheel held, at 64 bytes per 5.)
// The invariant: the
// heap's earliest deadline is before the start of the earliest non-empty bucket, and
// the heap is not empty while the wheel is not. Whenever a change breaks it, the
// earliest bucket moves into the heap (each timer keeps its sequence number, so equal
// deadlines still come out in scheduling order) and base moves past it. So Peek() is
// exact: the timer with the least (deadline, seq) of all. The heap's elements know
// their index (removal O(log n)); the keys live in the heap array, so sifting does not
// touch the tasks. Holds one reference per element.
//
// Thread safety: loop-confined (or under the owner's lock).
class ScheduledTaskHeap {
 public:
  static constexpr int kBucketShift = 22;  // 4.19 ms buckets
  static constexpr int64_t kBucketNanos = int64_t{1} << kBucketShift;
  static constexpr int kWheelSlots = 4096;  // a 17.2 s window
  static constexpr int64_t kWheelSpanNanos = kBucketNanos * kWheelSlots;
  // A bucket chunk: two links, a count and this many entries in 64 bytes.
  static constexpr int kChunkEntries = 5;
  static constexpr int kChunksPerSlab = 256;  // 16 KiB

  ScheduledTaskHeap() = default;
  ScheduledTaskHeap(const ScheduledTaskHeap&) = delete;
  ScheduledTaskHeap& operator=(const ScheduledTaskHeap&) = delete;
  ~ScheduledTaskHeap();

  // Adopts `task`'s reference; assigns its tie-break sequence number. The task's
  // deadline must not change while it is queued.
  void Push(ScheduledTaskRef task) {
    ScheduledTask* t = task.release();
    t->seq = next_seq_++;
    if (ABSL_PREDICT_FALSE(!WheelAppend(t))) PushSlow(t);
  }
  // The earliest task, or null.
  ScheduledTask* Peek() const { return heap_.empty() ? nullptr : heap_[0].task; }
  // The earliest deadline; INT64_MAX when empty.
  int64_t PeekDeadline() const { return heap_.empty() ? INT64_MAX : heap_[0].deadline; }
  // Removes the earliest task (the caller gets its reference).
  ScheduledTaskRef Pop();
  // Removes `task` if it is queued here; returns its reference (empty if it is in no
  // queue). `task` must not be queued in another ScheduledTaskHeap (each timer is only
  // ever queued by the executor it was scheduled on, which is the one that removes it).
  ScheduledTaskRef Remove(ScheduledTask* task);
  // Removes every task for which IsTaskDone() (cancelled ones), destroying its body and
  // dropping the queue's reference, in O(n). Returns how many were removed.
  size_t RemoveDone();
  // As RemoveDone, for the binary heap's part only (one O(h) rebuild instead of many
  // O(log h) removals; the wheel's removals are O(1) each anyway).
  size_t RemoveDoneFromHeap();
  size_t size() const { return heap_.size() + wheel_count_; }
  bool empty() const { return heap_.empty() && wheel_count_ == 0; }
  // How many of size() wait in the wheel (for tests and statistics), and in the heap.
  size_t wheel_size() const { return wheel_count_; }
  size_t heap_size() const { return heap_.size(); }
  // The slabs of bucket chunks held (for tests: released when the wheel empties).
  size_t wheel_slabs() const { return slabs_.size(); }
  // True when `task` sits in this queue's binary heap (not in its wheel, not elsewhere).
  bool InHeap(const ScheduledTask* task) const {
    const int32_t i = task->heap_index;
    return i >= 0 && static_cast<size_t>(i) < heap_.size() && heap_[i].task == task;
  }

 private:
  struct Entry {
    int64_t deadline;
    uint64_t seq;
    ScheduledTask* task;
  };
  static bool Less(const Entry& a, const Entry& b) {
    if (a.deadline != b.deadline) return a.deadline < b.deadline;
    return a.seq < b.seq;
  }
  void HeapPush(ScheduledTask* t);
  ScheduledTaskRef HeapRemove(ScheduledTask* task);
  void SiftUp(size_t i);
  void SiftDown(size_t i);
  void Place(size_t i, const Entry& e) {
    heap_[i] = e;
    e.task->heap_index = static_cast<int32_t>(i);
  }

  // The wheel.
  struct alignas(64) Chunk {
    Chunk* prev;  // the bucket's older chunk
    Chunk* next;  // the bucket's newer chunk
    uint32_t removed;  // entries filled and since removed (null)
    ScheduledTask* entry[kChunkEntries];
  };
  static_assert(sizeof(Chunk) == 64, "a chunk is one cache line");
  // A bucket: its newest chunk (the list goes on by prev) and how many of that chunk's
  // entries are filled (the older chunks' are all), in one word (a chunk's address has
  // six zero bits), so the bucket array is as small as a list head per bucket. The count
  // lives here, not in the chunk, so an insert's only read of memory it does not own is
  // this word: the chunk's line is only written.
  class Bucket {
   public:
    Chunk* tail() const { return reinterpret_cast<Chunk*>(word_ & ~kUsedMask); }
    uint32_t used() const { return static_cast<uint32_t>(word_ & kUsedMask); }
    void Set(Chunk* tail, uint32_t used) { word_ = reinterpret_cast<uintptr_t>(tail) | used; }

   private:
    static constexpr uintptr_t kUsedMask = alignof(Chunk) - 1;
    uintptr_t word_ = 0;
  };
  static_assert(kChunkEntries < alignof(Chunk), "the count fits beside the address");
  static Chunk* ChunkOf(ScheduledTask** entry) {
    return reinterpret_cast<Chunk*>(reinterpret_cast<uintptr_t>(entry) &
                                    ~uintptr_t{alignof(Chunk) - 1});
  }
  Chunk* NewChunk();
  // The slow paths of WheelInsert and WheelUnlink, out of line so that the fast paths
  // save no registers: a new chunk for `slot`'s bucket after `tail` (its words to be set
  // by the caller), and the removal of `c`, whose timers are all gone.
  ABSL_ATTRIBUTE_NOINLINE Chunk* StartChunk(int slot, Chunk* tail);
  ABSL_ATTRIBUTE_NOINLINE void ChunkEmptied(int slot, Chunk* c);
  // Frees the slabs but the first (the wheel is empty: every chunk is free).
  void ReleaseSlabs();
  // Takes `c` out of bucket `b`'s list and frees it.
  void DropChunk(Bucket& b, Chunk* c);
  bool WheelInsert(ScheduledTask* t);
  // Puts `t` into bucket `slot`'s newest chunk (a new one when that is full or the
  // bucket empty) and marks it as in the wheel. The counts are the caller's.
  void AppendToBucket(ScheduledTask* t, int slot) {
    Bucket& b = wheel_->bucket[slot];
    Chunk* c = b.tail();
    uint32_t used = b.used();
    if (ABSL_PREDICT_FALSE(c == nullptr || used == kChunkEntries)) {
      c = StartChunk(slot, c);
      used = 0;
    }
    c->entry[used] = t;
    t->wheel_entry = &c->entry[used];
    b.Set(c, used + 1);
    t->heap_index = ScheduledTask::kInWheel;
  }
  // The common case of Push, inline: the wheel holds timers and `t` falls inside its
  // window, in a bucket no earlier than the earliest one (so the invariant holds as it
  // is). Otherwise false, with nothing changed.
  bool WheelAppend(ScheduledTask* t) {
    const int64_t d = t->deadline_nanos();
    const uint64_t offset = static_cast<uint64_t>(d) - static_cast<uint64_t>(base_);
    if (wheel_count_ == 0 || offset >= static_cast<uint64_t>(kWheelSpanNanos) ||
        d > INT64_MAX - kWheelSpanNanos) {
      return false;
    }
    const int k = static_cast<int>(offset >> kBucketShift);
    if (k < ((earliest_ - origin_) & (kWheelSlots - 1))) return false;
    AppendToBucket(t, (origin_ + k) & (kWheelSlots - 1));
    ++wheel_count_;
    if (d > wheel_max_deadline_) wheel_max_deadline_ = d;
    return true;
  }
  // Push's other cases: the wheel's insert with its slow paths, or the heap; then Settle.
  ABSL_ATTRIBUTE_NOINLINE void PushSlow(ScheduledTask* t);
  void WheelUnlink(ScheduledTask* t);
  // The first non-empty slot at or after `slot` (cyclically), or -1.
  int FindNonEmpty(int slot) const;
  int64_t EarliestBucketStart() const {
    return base_ + static_cast<int64_t>((earliest_ - origin_) & (kWheelSlots - 1)) * kBucketNanos;
  }
  // Restores the invariant (see the class comment).
  void Settle();
  // Moves the earliest bucket into the heap and advances base past it.
  void MigrateEarliest();

  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
  struct Wheel {
    Bucket bucket[kWheelSlots];
    uint64_t bits[kWheelSlots / 64] = {};  // bucket[slot].tail() != nullptr
  };
  std::unique_ptr<Wheel> wheel_;  // made on first use
  std::vector<std::unique_ptr<Chunk[]>> slabs_;
  // The free chunks, by address: taking one reads this array, not the chunk's memory.
  // Its capacity covers every chunk of slabs_, so freeing never allocates.
  std::vector<Chunk*> free_chunks_;
  Chunk* fresh_ = nullptr;  // the newest slab's never used chunks: [fresh_, fresh_end_)
  Chunk* fresh_end_ = nullptr;
  size_t wheel_count_ = 0;
  int64_t base_ = 0;  // the start of slot origin_'s bucket
  int origin_ = 0;
  int earliest_ = -1;  // the earliest non-empty slot; -1 when the wheel is empty
  // At least the latest deadline in the wheel (not lowered by removals); set by the
  // first timer into an empty wheel.
  int64_t wheel_max_deadline_ = 0;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_SCHEDULED_TASK_H_
