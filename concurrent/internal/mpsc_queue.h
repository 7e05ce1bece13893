// A multi-producer single-consumer task queue (Vyukov's linked queue with a stub node)
// whose nodes are recycled instead of freed.
//
//   TaskQueue q;
//   q.Push(q.NewNode(std::move(task)));            // any thread, lock-free
//   TaskNode* n = q.Pop();                         // consumer thread only
//   ... run n->fn, clear it ...
//   q.FlushRetired();                              // consumer, at the end of a batch
//
// Push is one atomic exchange and one release store. Pop never blocks; it returns null
// when empty, and also in the short window where a producer has swapped the tail but
// not linked its node yet (MaybeNonEmpty() is then true: the consumer must not sleep).
//
// Node recycling: a node is allocated on a producer thread and retired on the consumer
// thread, so plain new/delete would be a cross-thread free per task. Instead the
// consumer collects retired nodes into chains and hands whole chains back through a
// per-queue free stack (one CAS per chain); a producer that runs out takes the whole
// stack at once (one exchange: no ABA, since only the consumer pushes) into a small
// per-thread cache, freed when the thread exits. The stack keeps about kMaxFreeNodes
// nodes at most and a thread's cache at most what it took from one stack, so recycled
// memory is bounded; beyond that, retired nodes are freed. New nodes are carved from
// per-thread slabs of NodeSlab::kNodes (see NodeSlab); a slab goes when its last node
// does, so a recycled node keeps its slab (3 KiB) allocated.
//
// Thread safety: NewNode/Push from any thread; Pop / Retire / FlushRetired /
// NoVisibleNodes / MaybeNonEmpty / destruction on the consumer only.
// Ownership: the queue owns queued nodes; Pop hands one to the caller, and keeps the
// previous one as the new stub (Pop's returned node stays valid until the next Pop).
#ifndef GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_
#define GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace gyre {
namespace internal {

struct NodeSlab;

struct TaskNode {
  TaskNode() = default;
  std::atomic<TaskNode*> next{nullptr};
  NodeSlab* slab = nullptr;  // the slab it was carved from; null: allocated alone
  absl::AnyInvocable<void()> fn;
};

// Nodes are carved kNodes at a time from a slab a producer thread allocates (one
// allocation instead of kNodes). Under a backlog (producers ahead of the loop) every
// task needs a fresh node, and a node freed by the loop thread is a cross-thread free
// into the producer's malloc arena, whose lock the producer's next malloc then contends
// for. A slab is freed when its last node is (`live` counts the nodes not yet freed,
// including the ones not yet handed out).
struct NodeSlab {
  static constexpr uint32_t kNodes = 64;
  NodeSlab() {
    for (TaskNode& n : nodes) n.slab = this;
    // Relaxed: a statistic (for tests), touched once per kNodes tasks.
    live_slabs.fetch_add(1, std::memory_order_relaxed);
  }
  ~NodeSlab() { live_slabs.fetch_sub(1, std::memory_order_relaxed); }
  // Slabs allocated and not yet freed, process-wide.
  static size_t LiveSlabs() { return live_slabs.load(std::memory_order_relaxed); }
  static inline std::atomic<size_t> live_slabs{0};

  alignas(64) std::atomic<uint32_t> live{kNodes};
  alignas(64) TaskNode nodes[kNodes];
};

// Frees a node whose task was run or is to be destroyed unrun (any thread).
inline void FreeTaskNode(TaskNode* node) {
  NodeSlab* slab = node->slab;
  if (slab == nullptr) {
    delete node;
    return;
  }
  node->fn = nullptr;  // the captures die here, not with the slab
  // acq_rel: the thread that frees the slab sees every write made to its nodes.
  if (slab->live.fetch_sub(1, std::memory_order_acq_rel) == 1) delete slab;
}

// This thread's cache of free nodes (taken from some queue's free stack), and the slab
// it carves new nodes from. Plain data so it is usable at any point of thread exit;
// the flush frees both when the thread exits (registered on first use).
struct NodeCache {
  TaskNode* head = nullptr;
  NodeSlab* slab = nullptr;
  uint32_t slab_next = 0;  // nodes of `slab` handed out
  bool flush_registered = false;
  bool exiting = false;  // the flush ran: take nothing more (it would leak)
};
inline thread_local NodeCache tls_node_cache{};
void RegisterNodeCacheFlush();
// A new node from this thread's slab (a new slab when it is used up).
TaskNode* CarveNode(NodeCache& cache);

class TaskQueue {
 public:
  static constexpr uint32_t kMaxFreeNodes = 1024;
  static constexpr uint32_t kRetireChain = 64;

  TaskQueue() : head_(new TaskNode()), tail_(head_) {}
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;
  ~TaskQueue() {
    FreeChain(head_);
    FreeChain(retired_head_);
    FreeChain(free_.load(std::memory_order_acquire));
  }

  // A node holding `fn`, recycled when possible. Any thread.
  TaskNode* NewNode(absl::AnyInvocable<void()>&& fn) {
    NodeCache& cache = tls_node_cache;
    TaskNode* node = cache.head;
    if (node == nullptr) node = Refill(cache);
    if (node != nullptr) {
      cache.head = node->next.load(std::memory_order_relaxed);
      node->next.store(nullptr, std::memory_order_relaxed);
    } else {
      node = CarveNode(cache);
    }
    node->fn = std::move(fn);
    return node;
  }

  void Push(TaskNode* node) {
    // seq_cst exchange: the consumer's sleep protocol is a Dekker pair (it stores its
    // "sleeping" flag then loads tail_; we exchange tail_ then load the flag).
    TaskNode* prev = tail_.exchange(node, std::memory_order_seq_cst);
    // Release: the consumer's acquire load of next sees the node's contents.
    prev->next.store(node, std::memory_order_release);
  }

  // Returns the next node, whose `fn` the caller runs and clears, or null. The returned
  // node becomes the stub; the previous stub is retired.
  TaskNode* Pop() {
    TaskNode* head = head_;
    // Acquire: pairs with Push's release store.
    TaskNode* next = head->next.load(std::memory_order_acquire);
    if (next == nullptr) return nullptr;
    head_ = next;
    Retire(head);
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

  // Hands the retired nodes back to producers. Consumer only; call after a batch.
  void FlushRetired() {
    if (retired_head_ != nullptr) PublishRetired();
  }

  // A counter for the owner's admission protocol (the executor counts each task here
  // before it pushes it). It shares the tail's cache line: a producer's two
  // read-modify-writes per task then take one line from the other producers, and the
  // line the consumer writes on every Pop (head_) is not one they write.
  std::atomic<uint64_t>& admission_count() { return admitted_; }
  const std::atomic<uint64_t>& admission_count() const { return admitted_; }

  // A spin-wait hint to the CPU.
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // True if no completed push is visible after the stub (a push may be in flight).
  // Consumer only; one load.
  bool NoVisibleNodes() const { return head_->next.load(std::memory_order_acquire) == nullptr; }

  // True if a node is linked, or being linked, after the stub.
  bool MaybeNonEmpty() const {
    if (head_->next.load(std::memory_order_acquire) != nullptr) return true;
    // seq_cst: see Push.
    return tail_.load(std::memory_order_seq_cst) != head_;
  }

 private:
  static void FreeChain(TaskNode* n) {
    while (n != nullptr) {
      TaskNode* next = n->next.load(std::memory_order_relaxed);
      FreeTaskNode(n);
      n = next;
    }
  }

  void Retire(TaskNode* node) {
    // The caller already cleared fn (the captures died on the loop thread).
    node->next.store(retired_head_, std::memory_order_relaxed);
    if (retired_head_ == nullptr) retired_tail_ = node;
    retired_head_ = node;
    if (++retired_count_ >= kRetireChain) PublishRetired();
  }

  void PublishRetired() {
    TaskNode* first = retired_head_;
    TaskNode* last = retired_tail_;
    uint32_t n = retired_count_;
    retired_head_ = retired_tail_ = nullptr;
    retired_count_ = 0;
    // Relaxed: a bound on recycled memory, approximate by design (a take racing this
    // push lets the stack hold one chain more than the bound, once).
    if (free_nodes_.load(std::memory_order_relaxed) + n > kMaxFreeNodes) {
      FreeChain(first);  // producers are not keeping up with recycling: free instead
      return;
    }
    TaskNode* top = free_.load(std::memory_order_relaxed);
    do {
      last->next.store(top, std::memory_order_relaxed);
      // Release: a producer's acquire exchange sees the chain's links and cleared fns.
    } while (!free_.compare_exchange_weak(top, first, std::memory_order_release,
                                          std::memory_order_relaxed));
    free_nodes_.fetch_add(n, std::memory_order_relaxed);
  }

  TaskNode* Refill(NodeCache& cache) {
    // Relaxed peek first: an empty stack costs no RMW.
    if (free_.load(std::memory_order_relaxed) == nullptr || cache.exiting) return nullptr;
    // Acquire: pairs with PublishRetired's release CAS.
    TaskNode* chain = free_.exchange(nullptr, std::memory_order_acquire);
    free_nodes_.store(0, std::memory_order_relaxed);
    if (chain != nullptr && !cache.flush_registered) RegisterNodeCacheFlush();
    return chain;
  }

  TaskNode* head_;  // consumer only
  // Consumer only: retired nodes not yet handed back.
  TaskNode* retired_head_ = nullptr;
  TaskNode* retired_tail_ = nullptr;
  uint32_t retired_count_ = 0;
  alignas(64) std::atomic<TaskNode*> tail_;
  // The owner's admission counter (see admission_count()), on the tail's cache line.
  std::atomic<uint64_t> admitted_{0};
  alignas(64) std::atomic<TaskNode*> free_{nullptr};
  std::atomic<uint32_t> free_nodes_{0};
};

}  // namespace internal
}  // namespace gyre

#endif  // GYRE_CONCURRENT_INTERNAL_MPSC_QUEUE_H_
