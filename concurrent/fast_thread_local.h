// FastThreadLocal<T>: a thread-local variable reached by index, with RemoveAll().
//
//   FastThreadLocal<std::string> buffer([] { return std::string(1024, '\0'); });
//   std::string& b = buffer.Get();     // initialised on first use on this thread
//   FastThreadLocal<std::string>::RemoveAll();  // destroys every value of this thread
//
// Each FastThreadLocal gets an index; each thread keeps a small array of values. Threads
// made by DefaultThreadFactory call RemoveAll() when they exit, destroying their values
// on their own thread; an executor's loop thread does so before its TerminationFuture()
// completes, whatever factory made it; other threads destroy theirs at thread exit
// through a thread_local sentinel.
//
// Thread safety: Get/Set/IsSet/Remove act on the calling thread's value only and are
// safe from any thread. Construction and destruction of the variable are thread-safe.
// Ownership: each thread owns its values. Destroying a FastThreadLocal does not destroy
// values other threads hold; they die with RemoveAll() or thread exit.
#ifndef GYRE_CONCURRENT_FAST_THREAD_LOCAL_H_
#define GYRE_CONCURRENT_FAST_THREAD_LOCAL_H_

#include <cstddef>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace gyre {

namespace internal {

using ThreadLocalDeleter = void (*)(void*);

// Allocates a new index (never reused).
size_t NewThreadLocalIndex();
// The calling thread's slot for `index`; null when unset.
void* GetThreadLocalSlot(size_t index);
// Replaces the calling thread's value for `index` (destroying the old one).
void SetThreadLocalSlot(size_t index, void* value, ThreadLocalDeleter deleter);
// Destroys and clears the calling thread's value for `index`.
void RemoveThreadLocalSlot(size_t index);
// Destroys every value of the calling thread.
void RemoveAllThreadLocalSlots();
// Number of values set on the calling thread.
size_t ThreadLocalSlotCount();

}  // namespace internal

// Destroys every FastThreadLocal value of the calling thread.
inline void FastThreadLocalRemoveAll() { internal::RemoveAllThreadLocalSlots(); }

template <typename T>
class FastThreadLocal {
 public:
  // Values start default-constructed on first Get().
  FastThreadLocal() : index_(internal::NewThreadLocalIndex()) {}
  // Values start as `initial()` on first Get(); `initial` runs on the calling thread.
  explicit FastThreadLocal(absl::AnyInvocable<T() const> initial)
      : index_(internal::NewThreadLocalIndex()), initial_(std::move(initial)) {}
  FastThreadLocal(const FastThreadLocal&) = delete;
  FastThreadLocal& operator=(const FastThreadLocal&) = delete;

  // Returns this thread's value, creating it first if unset.
  T& Get() {
    void* slot = internal::GetThreadLocalSlot(index_);
    if (slot == nullptr) {
      T* value;
      if constexpr (std::is_default_constructible_v<T>) {
        value = initial_ ? new T(initial_()) : new T();
      } else {
        value = new T(initial_());  // a T without a default needs the initial function
      }
      internal::SetThreadLocalSlot(index_, value, &Delete);
      return *value;
    }
    return *static_cast<T*>(slot);
  }

  // Returns this thread's value, or null when unset (never creates it).
  T* GetIfSet() const { return static_cast<T*>(internal::GetThreadLocalSlot(index_)); }

  // Replaces this thread's value.
  void Set(T value) { internal::SetThreadLocalSlot(index_, new T(std::move(value)), &Delete); }

  bool IsSet() const { return internal::GetThreadLocalSlot(index_) != nullptr; }

  // Destroys this thread's value (a later Get() makes a new one).
  void Remove() { internal::RemoveThreadLocalSlot(index_); }

  // Destroys every FastThreadLocal value (of any type) of the calling thread.
  static void RemoveAll() { internal::RemoveAllThreadLocalSlots(); }

  // Values set on the calling thread, over all FastThreadLocals.
  static size_t Size() { return internal::ThreadLocalSlotCount(); }

 private:
  static void Delete(void* p) { delete static_cast<T*>(p); }

  const size_t index_;
  absl::AnyInvocable<T() const> initial_;
};

}  // namespace gyre

#endif  // GYRE_CONCURRENT_FAST_THREAD_LOCAL_H_
