// AbstractNioChannel: what the nio socket channels share: the socket fd, the loop it is
// registered with, its epoll interest, registration and deregistration, and socket
// options applied from the channel's config.
//
// Subclasses implement the Unsafe operations that differ (connect, bind, read, write)
// and OnIoEvent. Every Unsafe operation hops to the loop thread when called elsewhere
// (before Register is called it runs on the caller's thread, as the pipeline does).
// A channel must not be used after its loop has terminated (the loop closes it then).
//
// Thread safety: the Channel accessors (IsOpen, IsActive, addresses) are thread-safe;
// everything else is loop-confined.
// Ownership: shared (std::shared_ptr); owns its fd and closes it on Close or destruction.
#ifndef GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_
#define GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/transport/nio/nio_event_loop.h"

namespace gyre {

class AbstractNioChannel : public Channel, protected NioIoHandler {
 public:
  ~AbstractNioChannel() override;

  bool IsOpen() const override {
    // Acquire: pairs with the release store in Close, after which the fd is gone.
    return open_.load(std::memory_order_acquire);
  }
  bool IsActive() const override {
    // Acquire: pairs with the release store made once the socket is bound/connected.
    return active_.load(std::memory_order_acquire);
  }
  SocketAddress local_address() const override;
  SocketAddress remote_address() const override;

  // The loop this channel is registered with (null before), as a NioEventLoop.
  NioEventLoop* nio_loop() const { return nio_loop_.load(std::memory_order_acquire); }

 protected:
  friend class NioEventLoop;

  // `fd` may be -1 (the socket is made on bind/connect).
  AbstractNioChannel(Channel* parent, int fd);

  // Runs `fn` now if on the loop (or unregistered), else queues it there with a
  // reference to this channel; `promise` (if any) fails with the rejection then.
  void RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise);
  bool OnLoopOrUnregistered() const;

  // Registration, common to both channels. Calls OnRegistered() after firing
  // ChannelRegistered.
  void DoRegister(EventLoop* loop, ChannelPromise promise);
  virtual void OnRegistered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  void FinishRegister(ChannelPromise promise) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void DoDeregister(ChannelPromise promise);

  // Sets the socket (after it was created); applies the config's settings to it.
  absl::Status AdoptFd(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  int fd() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return fd_; }

  // Adds / removes `events` from the epoll interest (loop thread; no-op unregistered).
  void AddInterest(uint32_t events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void RemoveInterest(uint32_t events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  uint32_t interest() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return interest_; }

  // Closes the fd and fires Inactive (if it was active) and Unregistered, completes
  // CloseFuture. Returns false if the channel was already closed. Subclasses call
  // it from Close after failing their own pending operations.
  bool CloseCommon() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  void SetActive(bool active) {
    // Release: see IsActive().
    active_.store(active, std::memory_order_release);
  }
  void CacheAddresses() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

 private:
  void ApplyInterest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // No interest set is known to be registered with the loop (before registration, after
  // the fd was removed from it).
  static constexpr uint32_t kNoInterestApplied = ~uint32_t{0};

  int fd_ ABSL_GUARDED_BY(loop_affinity_) = -1;  // loop-confined after registration
  uint32_t interest_ ABSL_GUARDED_BY(loop_affinity_) = 0;
  // The interest set last registered with the loop: ApplyInterest skips the loop's
  // bookkeeping when nothing changed (every read re-arms read interest). Loop-confined.
  uint32_t applied_interest_ ABSL_GUARDED_BY(loop_affinity_) = kNoInterestApplied;
  // The loop this channel belongs to, claimed by CAS in DoRegister (any thread); never
  // changes afterwards. Acquire loads pair with that acq_rel claim.
  std::atomic<NioEventLoop*> nio_loop_{nullptr};
  std::atomic<bool> open_{true};
  std::atomic<bool> active_{false};
  mutable internal::Mutex addr_mu_;
  SocketAddress local_ ABSL_GUARDED_BY(addr_mu_);
  SocketAddress remote_ ABSL_GUARDED_BY(addr_mu_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_ABSTRACT_NIO_CHANNEL_H_
