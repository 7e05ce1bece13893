// AbstractSocketChannel: what every transport's socket channel shares: the socket fd,
// the loop the channel is registered with, registration and deregistration, closing,
// the cached addresses, and socket options applied from the channel's config.
//
// A transport derives its channel base from this one (AbstractNioChannel,
// AbstractOioChannel) and supplies the few steps that differ: which loops it accepts
// (CheckLoop), how the channel joins and leaves its loop (JoinLoop, LeaveLoop), what
// happens to the fd in the loop before it is closed (ReleaseFd), and how reading stops
// when AUTO_READ turns off (StopAutoRead).
//
// A connecting channel (DoBind, DoConnect) also finds its connect here: a
// non-blocking connect(2) whose outcome the transport reports (FinishConnect, when the
// socket turns writable), failed with DeadlineExceeded after CONNECT_TIMEOUT (default
// 30 s) and with the errno status (ECONNREFUSED: Unavailable) when refused; the
// channel closes then (CloseWithCause). On success the channel is active, with its
// addresses known, before the connect future's listeners run; then BecomeActive.
//
// Every operation hops to the loop thread when called elsewhere (RunOnLoop); before
// registration it runs on the caller's thread, as the pipeline does.
//
// Thread safety: the Channel accessors (IsOpen, IsActive, addresses, registered_loop)
// are thread-safe; everything else is loop-confined (ABSL_GUARDED_BY loop_affinity_).
// Ownership: shared (std::shared_ptr); owns its fd and closes it on Close or
// destruction.
#ifndef GYRE_TRANSPORT_ABSTRACT_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_ABSTRACT_SOCKET_CHANNEL_H_

#include <atomic>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/single_thread_event_loop.h"
#include "gyre/concurrent/internal/mutex.h"
#include "gyre/concurrent/scheduled_future.h"

namespace gyre {

class AbstractSocketChannel : public Channel {
 public:
  ~AbstractSocketChannel() override;

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

  // The loop this channel is registered with (null before). Never changes once set.
  SingleThreadEventLoop* registered_loop() const { return loop_.load(std::memory_order_acquire); }

 protected:
  // The part of a transport's Unsafe that is this class's: registration, bind, connect,
  // close, deregistration, and disconnect as close. A transport's Unsafe derives from it
  // and adds read, write and flush. Owned by (and pointing at) its channel.
  class SocketUnsafe : public Unsafe {
   public:
    explicit SocketUnsafe(AbstractSocketChannel* channel) : channel_(channel) {}
    void Register(EventLoop* loop, ChannelPromise promise) override {
      channel_->DoRegister(loop, std::move(promise));
    }
    void Bind(const SocketAddress& local, ChannelPromise promise) override {
      channel_->DoBind(local, std::move(promise));
    }
    void Connect(const SocketAddress& remote, const SocketAddress& local,
                 ChannelPromise promise) override {
      channel_->DoConnect(remote, local, std::move(promise));
    }
    void Close(ChannelPromise promise) override { channel_->DoClose(std::move(promise)); }
    void Disconnect(ChannelPromise promise) override { Close(std::move(promise)); }
    void Deregister(ChannelPromise promise) override {
      channel_->DoDeregister(std::move(promise));
    }

   private:
    AbstractSocketChannel* const channel_;
  };

  // `fd` may be -1 (the socket is made on bind/connect).
  AbstractSocketChannel(Channel* parent, int fd);

  // Runs `fn` now if on the loop (or unregistered), else queues it there with a
  // reference to this channel; `promise` (if any) fails with the rejection then.
  void RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise);
  // True on the registered loop's thread, or when no loop is registered. Inline: every
  // write, flush and read asks it.
  bool OnLoopOrUnregistered() const {
    SingleThreadEventLoop* loop = registered_loop();
    return loop == nullptr || loop->InEventLoop();
  }

  // Registration: claims `loop` on the calling thread (of racing registrations exactly
  // one wins; later operations queue behind it, in order), then completes on the loop:
  // JoinLoop, handlerAdded, the promise, ChannelRegistered, OnRegistered.
  void DoRegister(EventLoop* loop, ChannelPromise promise);
  // Closes the channel (CloseWithCause with OK) and then succeeds `promise`; at once
  // when it is closed already (an oio channel's loop may have terminated).
  void DoClose(ChannelPromise promise);
  // Leaves the loop (ReleaseFd, LeaveLoop) and fires ChannelUnregistered; the fd stays
  // open.
  void DoDeregister(ChannelPromise promise);

  // Binds (making the socket first) / connects (binding to `local` first unless it is
  // empty). Any thread: they hop to the loop.
  void DoBind(const SocketAddress& local, ChannelPromise promise);
  void DoConnect(const SocketAddress& remote, const SocketAddress& local, ChannelPromise promise);
  // A connect is in progress.
  bool IsConnecting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {
    return connect_promise_.has_value();
  }
  // The socket of a connecting channel reported its outcome (writable or failed).
  void FinishConnect() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Fails a pending connect with `cause` (FailedPrecondition "closed" when OK) and
  // cancels its timeout; the channel's close path calls it.
  void AbortConnect(const absl::Status& cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Sets the socket (after it was created); applies the config's settings to it.
  absl::Status AdoptFd(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Makes a socket of `family` unless the channel has one.
  absl::Status EnsureSocket(int family) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  int fd() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) { return fd_; }

  // Closes the fd and fires Inactive (if it was active) and Unregistered, completes
  // CloseFuture, and leaves the loop. Returns false if the channel was already closed.
  // Subclasses call it from Close after failing their own pending operations.
  bool CloseCommon() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  void SetActive(bool active) {
    // Release: see IsActive().
    active_.store(active, std::memory_order_release);
  }
  void CacheAddresses() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Active, with the addresses cached (a connected or accepted socket).
  void MarkConnected() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // --- What a transport supplies. ---

  // OK when this channel can register with `loop` (InvalidArgument naming the loop
  // type it needs otherwise). Any thread.
  virtual absl::Status CheckLoop(EventLoop* loop) const = 0;
  // CheckLoop's body for a transport that needs its own loop type: OK when `loop` is a
  // `Loop`, InvalidArgument with `needs` otherwise.
  template <typename Loop>
  static absl::Status RequireLoop(EventLoop* loop, const char* needs) {
    if (dynamic_cast<Loop*>(loop) == nullptr) return absl::InvalidArgumentError(needs);
    return absl::OkStatus();
  }
  // Right after `loop` was claimed, on the registering thread (before the loop can
  // run anything of this channel). Default: nothing.
  virtual void OnLoopClaimed(SingleThreadEventLoop* loop) {}
  // Registration completes: the loop starts serving the channel. Default: the loop
  // keeps the channel alive (SingleThreadEventLoop::AddChannel).
  virtual void JoinLoop(SingleThreadEventLoop* loop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // The channel deregistered or closed; called last, so the loop's reference may be
  // the one keeping the channel alive. Default: SingleThreadEventLoop::RemoveChannel.
  virtual void LeaveLoop(SingleThreadEventLoop* loop) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // The loop must forget the fd (it is about to close, or the channel deregisters).
  // Default: nothing.
  virtual void ReleaseFd(SingleThreadEventLoop* loop, int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  // AUTO_READ was turned off (any thread). Default: nothing (the head stops asking
  // for reads, and the read already asked for is the last one).
  virtual void StopAutoRead() {}
  // After ChannelRegistered fired. Default: nothing.
  virtual void OnRegistered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}

  // --- What a connecting channel supplies. ---

  // connect(2) is in progress: the loop must report writability (then FinishConnect).
  // Default: nothing.
  virtual void WaitForConnect() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  // The connect succeeded; called before the channel turns active. Default: nothing.
  virtual void ConnectDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  // The channel is connected and its connect future succeeded. Default: fires
  // ChannelActive.
  virtual void BecomeActive() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Closes the channel after an error (`cause`), failing what it has pending.
  // Default: CloseCommon.
  virtual void CloseWithCause(absl::Status cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

 private:
  void FinishRegister(ChannelPromise promise) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void ConnectOnLoop(const SocketAddress& remote, const SocketAddress& local,
                     ChannelPromise promise) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Fails the pending connect with `cause` and closes the channel.
  void FailConnect(absl::Status cause) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // Takes the pending connect's promise (which must exist) and cancels its timeout.
  ChannelPromise TakeConnectPromise() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  int fd_ ABSL_GUARDED_BY(loop_affinity_) = -1;
  std::optional<ChannelPromise> connect_promise_ ABSL_GUARDED_BY(loop_affinity_);
  std::optional<ScheduledFuture<void>> connect_timeout_ ABSL_GUARDED_BY(loop_affinity_);
  // Claimed by CAS in DoRegister (any thread); never changes afterwards, except that a
  // loop refusing the registration task un-claims it. Acquire loads pair with the
  // acq_rel claim.
  std::atomic<SingleThreadEventLoop*> loop_{nullptr};
  std::atomic<bool> open_{true};
  std::atomic<bool> active_{false};
  mutable internal::Mutex addr_mu_;
  SocketAddress local_ ABSL_GUARDED_BY(addr_mu_);
  SocketAddress remote_ ABSL_GUARDED_BY(addr_mu_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_ABSTRACT_SOCKET_CHANNEL_H_
