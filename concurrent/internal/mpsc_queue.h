// A multi-producer single-consumer task queue (Vyukov's linked queue with a stub node).
//
//   TaskQueue q;
//   q.Push(new TaskNode(std::move(task)));        // any thread, lock-free, wait-free
//   TaskNode* n = q.Pop();                         // consumer thread only
//
// Push is one atomic exchange and one release store. Pop never blocks; it returns null
// when empty, and also in the short window where a producer has swapped the tail but
// not linked its node yet (MaybeNonEmpty() is then true: the consumer must not sleep).
//
// Thread safety: Push from any thread; Pop / Empty / destruction on the consumer only.
// Ownership: the queue owns queued nodes; Pop hands one to the caller, and keeps the
// previous one as the new stub (Pop's returned node stays valid until the next Pop).
#ifndef GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_
#define GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace gyre {
namespace internal {

struct TaskNode {
  TaskNode() = default;
  explicit TaskNode(absl::AnyInvocable<void()> f) : fn(std::move(f)) {}
  std::atomic<TaskNode*> next{nullptr};
  absl::AnyInvocable<void()> fn;
};

class TaskQueue {
 public:
  TaskQueue() : head_(new TaskNode()), tail_(head_) {}
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;
  ~TaskQueue() {
    TaskNode* n = head_;
    while (n != nullptr) {
      TaskNode* next = n->next.load(std::memory_order_relaxed);
      delete n;
      n = next;
    }
  }

  void Push(TaskNode* node) {
    // seq_cst exchange: the consumer's sleep protocol is a Dekker pair (it stores its
    // "sleeping" flag then loads tail_; we exchange tail_ then load the flag).
    TaskNode* prev = tail_.exchange(node, std::memory_order_seq_cst);
    // Release: the consumer's acquire load of next sees the node's contents.
    prev->next.store(node, std::memory_order_release);
  }

  // Returns the next node, whose `fn` the caller runs and clears, or null. The returned
  // node becomes the stub; the previous stub is freed.
  TaskNode* Pop() {
    TaskNode* head = head_;
    // Acquire: pairs with Push's release store.
    TaskNode* next = head->next.load(std::memory_order_acquire);
    if (next == nullptr) return nullptr;
    head_ = next;
    delete head;
    return next;
  }

  // Counts the linked nodes after the stub, at most `max`; each of them is then
  // guaranteed to come out of the next Pop() calls.
  size_t CountReady(size_t max) const {
    size_t n = 0;
    TaskNode* node = head_;
    while (n < max) {
      node = node->next.load(std::memory_order_acquire);
      if (node == nullptr) break;
      ++n;
    }
    return n;
  }

  // A spin-wait hint to the CPU.
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // True if a node is linked, or being linked, after the stub.
  bool MaybeNonEmpty() const {
    if (head_->next.load(std::memory_order_acquire) != nullptr) return true;
    // seq_cst: see Push.
    return tail_.load(std::memory_order_seq_cst) != head_;
  }

 private:
  TaskNode* head_;                     // consumer only
  alignas(64) std::atomic<TaskNode*> tail_;
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_
