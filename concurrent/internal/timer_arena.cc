#include "gyre/concurrent/internal/timer_arena.h"

#include <new>
#include <utility>

namespace gyre {
namespace internal {

TimerArena::~TimerArena() {
  ChunkHeader* c = chunks_;
  while (c != nullptr) {
    ChunkHeader* next = c->next_chunk;
    c->~ChunkHeader();
    ::operator delete(static_cast<void*>(c), std::align_val_t{kChunkBytes});
    c = next;
  }
}

void* TimerArena::AllocateSlow(int c) {
  // Blocks other threads freed first: they are memory already touched.
  if (remote_[c].load(std::memory_order_relaxed) != nullptr) {
    // Acquire: pairs with each FreeRemote push's release; the pushers' last writes to
    // their blocks happen before the blocks are handed out again.
    FreeBlock* b = remote_[c].exchange(nullptr, std::memory_order_acquire);
    if (b != nullptr) {
      free_[c] = b->next;
      return b;
    }
  }
  const size_t bytes = ClassBytes(c);
  if (bump_end_[c] - bump_[c] < static_cast<ptrdiff_t>(bytes)) {
    void* mem = ::operator new(kChunkBytes, std::align_val_t{kChunkBytes});
    chunks_ = ::new (mem) ChunkHeader{this, chunks_, c};
    ++chunk_count_;
    if (reserved_ != nullptr) reserved_->fetch_add(kChunkBytes, std::memory_order_relaxed);
    // The rest of the previous chunk of this class (less than one block) is left unused.
    bump_[c] = static_cast<char*>(mem) + sizeof(ChunkHeader);
    bump_end_[c] = static_cast<char*>(mem) + kChunkBytes;
  }
  void* p = bump_[c];
  bump_[c] += bytes;
  ++carved_;
  return p;
}

void TimerArena::FreeRemote(FreeBlock* b, int c) noexcept {
  FreeBlock* head = remote_[c].load(std::memory_order_relaxed);
  for (;;) {
    if (head == Orphaned()) {
      // The owner is gone and has counted (or is about to count) the blocks still out
      // into outstanding_; the count may dip below zero first, never reach zero early.
      if (outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
      return;
    }
    b->next = head;
    if (remote_[c].compare_exchange_weak(head, b, std::memory_order_release,
                                         std::memory_order_relaxed)) {
      return;
    }
  }
}

int64_t TimerArena::Length(const FreeBlock* b) {
  int64_t n = 0;
  for (; b != nullptr; b = b->next) ++n;
  return n;
}

int64_t TimerArena::CountLiveBlocks() const {
  int64_t free = 0;
  for (int c = 0; c < kClasses; ++c) {
    free += Length(free_[c]);
    // Acquire: the pushed blocks' links were written before their release push.
    FreeBlock* r = remote_[c].load(std::memory_order_acquire);
    if (r != Orphaned()) free += Length(r);
  }
  return carved_ - free;
}

void TimerArena::Orphan() noexcept {
  if (reserved_ != nullptr) std::exchange(reserved_, nullptr)->store(0, std::memory_order_relaxed);
  // Blocks pushed before a class's exchange are counted back here; later frees see
  // Orphaned() and count down outstanding_ instead.
  int64_t free = 0;
  for (int c = 0; c < kClasses; ++c) {
    free += Length(free_[c]);
    free_[c] = nullptr;
    free += Length(remote_[c].exchange(Orphaned(), std::memory_order_acquire));
  }
  const int64_t out = carved_ - free;
  // Frees that ran since an exchange took outstanding_ below zero; the sum reaches zero
  // exactly when the last block is back, and whoever brings it there deletes.
  if (outstanding_.fetch_add(out, std::memory_order_acq_rel) + out == 0) delete this;
}

}  // namespace internal
}  // namespace gyre
