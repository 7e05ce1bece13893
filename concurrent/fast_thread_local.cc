#include "gyre/concurrent/fast_thread_local.h"

#include <atomic>
#include <vector>

namespace gyre {
namespace internal {
namespace {

// Relaxed: only uniqueness of indices matters.
std::atomic<size_t> next_index{0};

struct Slot {
  void* value = nullptr;
  ThreadLocalDeleter deleter = nullptr;
};

// The per-thread values; its destructor frees whatever is left at thread exit.
struct ThreadLocalMap {
  std::vector<Slot> slots;
  size_t count = 0;
  ~ThreadLocalMap() { Clear(); }
  void Clear() {
    // A value's destructor may touch other thread locals: take each out first.
    for (size_t i = 0; i < slots.size(); ++i) {
      Slot slot = slots[i];
      if (slot.value == nullptr) continue;
      slots[i] = Slot{};
      --count;
      slot.deleter(slot.value);
    }
  }
};

thread_local ThreadLocalMap tls_map;

}  // namespace

size_t NewThreadLocalIndex() { return next_index.fetch_add(1, std::memory_order_relaxed); }

void* GetThreadLocalSlot(size_t index) {
  ThreadLocalMap& map = tls_map;
  return index < map.slots.size() ? map.slots[index].value : nullptr;
}

void SetThreadLocalSlot(size_t index, void* value, ThreadLocalDeleter deleter) {
  ThreadLocalMap& map = tls_map;
  if (index >= map.slots.size()) map.slots.resize(index + 1);
  Slot old = map.slots[index];
  map.slots[index] = Slot{value, deleter};
  if (old.value == nullptr) {
    ++map.count;
  } else {
    old.deleter(old.value);
  }
}

void RemoveThreadLocalSlot(size_t index) {
  ThreadLocalMap& map = tls_map;
  if (index >= map.slots.size() || map.slots[index].value == nullptr) return;
  Slot old = map.slots[index];
  map.slots[index] = Slot{};
  --map.count;
  old.deleter(old.value);
}

void RemoveAllThreadLocalSlots() { tls_map.Clear(); }

size_t ThreadLocalSlotCount() { return tls_map.count; }

}  // namespace internal
}  // namespace gyre
