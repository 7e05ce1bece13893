// Message: a type-erased, move-only value passed through a ChannelPipeline.
//
//   Message m = ByteBuf(...);                  // or any movable type
//   if (ByteBuf* buf = m.Get<ByteBuf>()) Use(*buf);
//   std::string s = *std::move(m).Take<std::string>();   // nullopt if another type
//
// Values whose type is nothrow-movable and at most kInlineSize bytes (a buffer handle, a
// small struct, a std::string) live inline: moving a Message then costs a few words and
// no allocation. Larger values are boxed on the heap once, when the Message is made (from
// a per-thread cache of small blocks: no call to the allocator in the steady state).
// The type test compares one pointer (no RTTI). Moving a boxed value, or an inline one
// whose type is trivially copyable, a standard smart pointer, or declares itself
// trivially relocatable (`using IsTriviallyRelocatable = std::true_type;`, as ByteBuf
// does: moving it and destroying the source is the same as copying its bytes), copies
// the inline bytes with no indirect call.
//
// Thread safety: thread-compatible (one owner at a time, like the value it holds).
// Ownership: owns its value; destroying the Message destroys it (for a ByteBuf handle,
// that releases the buffer).
#ifndef GYRE_CHANNEL_MESSAGE_H_
#define GYRE_CHANNEL_MESSAGE_H_

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

#include "gyre/concurrent/internal/small_block.h"

namespace gyre {

namespace internal {

// One object per type; its address identifies the type.
struct MessageTypeTag {
  const char* name;  // for logs; the compiler's spelling, not stable
};

template <typename T>
const char* MessageTypeName() {
#if defined(__GNUC__)
  return __PRETTY_FUNCTION__;
#else
  return "unknown";
#endif
}

template <typename T>
inline const MessageTypeTag kMessageTypeTag{MessageTypeName<T>()};

// True when moving a T and destroying the source equals copying its bytes.
template <typename T, typename = void>
struct DeclaresTriviallyRelocatable : std::false_type {};
template <typename T>
struct DeclaresTriviallyRelocatable<T, std::void_t<typename T::IsTriviallyRelocatable>>
    : T::IsTriviallyRelocatable {};
// The standard smart pointers: a pointer (or two) that their move leaves null, in
// libstdc++ and libc++ alike.
template <typename T>
struct IsRelocatableSmartPointer : std::false_type {};
template <typename T>
struct IsRelocatableSmartPointer<std::shared_ptr<T>> : std::true_type {};
template <typename T>
struct IsRelocatableSmartPointer<std::weak_ptr<T>> : std::true_type {};
template <typename T>
struct IsRelocatableSmartPointer<std::unique_ptr<T>> : std::true_type {};
template <typename T>
inline constexpr bool kTriviallyRelocatable = std::is_trivially_copyable_v<T> ||
                                              DeclaresTriviallyRelocatable<T>::value ||
                                              IsRelocatableSmartPointer<T>::value;

}  // namespace internal

class Message {
 public:
  static constexpr size_t kInlineSize = 32;

  Message() noexcept = default;

  template <typename T, typename D = std::decay_t<T>,
            typename = std::enable_if_t<!std::is_same_v<D, Message>>>
  Message(T&& value) {  // NOLINT: implicit, so handlers can pass values directly
    Emplace<D>(std::forward<T>(value));
  }

  Message(Message&& other) noexcept { MoveFrom(other); }
  Message& operator=(Message&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  ~Message() { Reset(); }

  bool empty() const { return ops_ == nullptr; }
  explicit operator bool() const { return ops_ != nullptr; }

  template <typename T>
  bool Is() const {
    return ops_ != nullptr && ops_->tag == &internal::kMessageTypeTag<T>;
  }

  // Returns the value if it is a T, else nullptr.
  template <typename T>
  T* Get() {
    return Is<T>() ? static_cast<T*>(ops_->address(this)) : nullptr;
  }
  template <typename T>
  const T* Get() const {
    return Is<T>() ? static_cast<const T*>(ops_->address(const_cast<Message*>(this))) : nullptr;
  }

  // Moves the value out if it is a T (leaving this Message empty), else nullopt (and
  // this Message unchanged).
  template <typename T>
  std::optional<T> Take() && {
    T* v = Get<T>();
    if (v == nullptr) return std::nullopt;
    std::optional<T> out(std::move(*v));
    Reset();
    return out;
  }

  // Destroys the value; the Message becomes empty.
  void Reset() {
    if (ops_ != nullptr) {
      ops_->destroy(this);
      ops_ = nullptr;
    }
  }

  // The held type's name, for diagnostics ("empty" when empty).
  const char* type_name() const { return ops_ != nullptr ? ops_->tag->name : "empty"; }

 private:
  struct Ops {
    const internal::MessageTypeTag* tag;
    void* (*address)(Message*);
    // to is empty; from becomes empty. Null: the value relocates by copying the bytes.
    void (*move)(Message* from, Message* to);
    void (*destroy)(Message*);
  };

  template <typename T>
  static constexpr bool kInline = sizeof(T) <= kInlineSize && alignof(T) <= alignof(std::max_align_t) &&
                                  std::is_nothrow_move_constructible_v<T>;

  template <typename T>
  struct InlineOps {
    static void* Address(Message* m) { return std::launder(reinterpret_cast<T*>(m->storage_)); }
    static void Move(Message* from, Message* to) {
      T* src = static_cast<T*>(Address(from));
      ::new (static_cast<void*>(to->storage_)) T(std::move(*src));
      src->~T();
    }
    static void Destroy(Message* m) { static_cast<T*>(Address(m))->~T(); }
    static constexpr Ops kOps{&internal::kMessageTypeTag<T>, &Address,
                              internal::kTriviallyRelocatable<T> ? nullptr : &Move, &Destroy};
  };

  template <typename T>
  struct BoxedOps {
    static T*& Box(Message* m) { return *std::launder(reinterpret_cast<T**>(m->storage_)); }
    static void* Address(Message* m) { return Box(m); }
    static void Destroy(Message* m) {
      T* value = Box(m);
      value->~T();
      internal::FreeSmallBlock(value, sizeof(T));
    }
    // The box is a pointer: it relocates by copying the bytes.
    static constexpr Ops kOps{&internal::kMessageTypeTag<T>, &Address, nullptr, &Destroy};
  };

  template <typename D, typename T>
  void Emplace(T&& value) {
    if constexpr (kInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<T>(value));
      ops_ = &InlineOps<D>::kOps;
    } else {
      static_assert(alignof(D) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                    "over-aligned message types are not supported");
      void* block = internal::AllocateSmallBlock(sizeof(D));
      D* boxed;
      try {
        boxed = ::new (block) D(std::forward<T>(value));
      } catch (...) {
        internal::FreeSmallBlock(block, sizeof(D));
        throw;
      }
      ::new (static_cast<void*>(storage_)) D*(boxed);
      ops_ = &BoxedOps<D>::kOps;
    }
  }

  void MoveFrom(Message& other) noexcept {
    if (other.ops_ != nullptr) {
      if (other.ops_->move == nullptr) {
        // The whole buffer, whatever the value's size: bytes past a small value are
        // indeterminate and copied as such (GCC may flag that once it sees both ends).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
        std::memcpy(storage_, other.storage_, kInlineSize);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
      } else {
        other.ops_->move(&other, this);
      }
      ops_ = std::exchange(other.ops_, nullptr);
    }
  }

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_MESSAGE_H_
