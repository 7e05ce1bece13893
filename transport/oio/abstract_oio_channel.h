// AbstractOioChannel: what the oio socket channels share: the socket fd, the
// ThreadPerChannelEventLoop it is registered with, registration and deregistration,
// closing, and socket options applied from the channel's config.
//
// Subclasses implement the Unsafe operations that differ (connect, bind, read, write)
// and the OioIoHandler side (which poll events they want, what to do when ready).
// Every Unsafe operation hops to the loop thread when called elsewhere (before
// Register it runs on the caller's thread, as the pipeline does). Once the channel has
// closed or deregistered its loop terminates; operations after that fail their
// futures with FailedPrecondition.
//
// Thread safety: the Channel accessors (IsOpen, IsActive, addresses) are thread-safe;
// everything else is loop-confined.
// Ownership: shared (std::shared_ptr); owns its fd and closes it on Close or
// destruction; holds its loop (shared_ptr) from registration on, so event_loop() stays
// valid for the channel's life.
#ifndef GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_
#define GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_

#include <atomic>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/transport/oio/thread_per_channel_event_loop.h"

namespace gyre {

class AbstractOioChannel : public Channel, protected OioIoHandler {
 public:
  ~AbstractOioChannel() override;

  bool IsOpen() const override {
    // Acquire: pairs with the release store in CloseCommon, after which the fd is gone.
    return open_.load(std::memory_order_acquire);
  }
  bool IsActive() const override {
    // Acquire: pairs with the release store made once the socket is bound/connected.
    return active_.load(std::memory_order_acquire);
  }
  SocketAddress local_address() const override;
  SocketAddress remote_address() const override;

  // The loop this channel is registered with (null before).
  ThreadPerChannelEventLoop* oio_loop() const { return oio_loop_.load(std::memory_order_acquire); }

 protected:
  // `fd` may be -1 (the socket is made on bind/connect).
  AbstractOioChannel(Channel* parent, int fd);

  // Runs `fn` now if on the loop (or unregistered), else queues it there with a
  // reference to this channel; `promise` (if any) fails with the rejection then.
  void RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise);
  bool OnLoopOrUnregistered() const;

  // Registration. Calls OnRegistered() after firing ChannelRegistered.
  void DoRegister(EventLoop* loop, ChannelPromise promise);
  virtual void OnRegistered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  void DoDeregister(ChannelPromise promise);

  // Sets the socket (after it was created); applies the config's settings to it.
  absl::Status AdoptFd(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // OioIoHandler
  int PollFd() const override {
    loop_affinity_.AssertOnLoop();  // called by the loop
    return fd_;
  }

  // Closes the fd, fires Inactive (if it was active) and Unregistered, completes
  // CloseFuture, and detaches from the loop (which then terminates). Returns false if
  // the channel was already closed.
  bool CloseCommon() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  void SetActive(bool active) {
    // Release: see IsActive().
    active_.store(active, std::memory_order_release);
  }
  void CacheAddresses() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  int fd() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return fd_; }

 private:
  void FinishRegister(ChannelPromise promise) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  int fd_ ABSL_GUARDED_BY(loop_affinity_) = -1;  // loop-confined after registration
  // Claimed by CAS in DoRegister (any thread); never changes afterwards. Acquire loads
  // pair with that acq_rel claim.
  std::atomic<ThreadPerChannelEventLoop*> oio_loop_{nullptr};
  // Keeps the loop alive for this channel's life; written once, before the claim is
  // used by any other thread (the Execute that hands registration over orders it).
  std::shared_ptr<ThreadPerChannelEventLoop> loop_ref_;
  std::atomic<bool> open_{true};
  std::atomic<bool> active_{false};
  mutable internal::Mutex addr_mu_;
  SocketAddress local_ ABSL_GUARDED_BY(addr_mu_);
  SocketAddress remote_ ABSL_GUARDED_BY(addr_mu_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_ABSTRACT_OIO_CHANNEL_H_
