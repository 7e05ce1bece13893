#include "gyre/transport/abstract_socket_channel.h"

#include <unistd.h>

#include <memory>
#include <utility>

#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

AbstractSocketChannel::AbstractSocketChannel(Channel* parent, int fd) : Channel(parent), fd_(fd) {
  // Options set later go to the socket at once, on the loop (or here while unregistered).
  config().SetApplier([this](const ChannelOptionSetting& setting) -> absl::Status {
    if (OnLoopOrUnregistered()) {
      loop_affinity_.AssertOnLoop();
      return fd_ >= 0 ? internal_transport::ApplySocketOption(fd_, setting) : absl::OkStatus();
    }
    std::shared_ptr<Channel> self = shared_from_this();
    return registered_loop()->Execute([this, self, setting] {
      loop_affinity_.AssertOnLoop();
      if (fd_ < 0) return;
      absl::Status s = internal_transport::ApplySocketOption(fd_, setting);
      if (!s.ok()) GYRE_LOG(WARNING) << "channel " << id().AsShortText() << ": " << s;
    });
  });
  config().SetAutoReadListener([this](bool on) {
    if (on) {
      Read();
    } else {
      StopAutoRead();
    }
  });
}

AbstractSocketChannel::~AbstractSocketChannel() {
  loop_affinity_.AssumeExclusive();  // the last reference is gone: nothing else runs here
  if (fd_ >= 0) close(fd_);
}

SocketAddress AbstractSocketChannel::local_address() const {
  internal::MutexLock lock(&addr_mu_);
  return local_;
}

SocketAddress AbstractSocketChannel::remote_address() const {
  internal::MutexLock lock(&addr_mu_);
  return remote_;
}

void AbstractSocketChannel::CacheAddresses() {
  if (fd_ < 0) return;
  SocketAddress local = internal_transport::LocalAddress(fd_);
  SocketAddress remote = internal_transport::PeerAddress(fd_);
  internal::MutexLock lock(&addr_mu_);
  local_ = local;
  if (!remote.empty()) remote_ = remote;
}

bool AbstractSocketChannel::OnLoopOrUnregistered() const {
  SingleThreadEventLoop* loop = registered_loop();
  return loop == nullptr || loop->InEventLoop();
}

void AbstractSocketChannel::RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise) {
  if (OnLoopOrUnregistered()) {
    fn();
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = registered_loop()->Execute([self, fn = std::move(fn)]() mutable { fn(); });
  if (!s.ok() && promise != nullptr) promise->TryFailure(s);
}

absl::Status AbstractSocketChannel::AdoptFd(int fd) {
  fd_ = fd;
  for (const ChannelOptionSetting& s : config().Settings()) {
    absl::Status applied = internal_transport::ApplySocketOption(fd_, s);
    if (!applied.ok()) return applied;
  }
  return absl::OkStatus();
}

void AbstractSocketChannel::DoRegister(EventLoop* loop, ChannelPromise promise) {
  absl::Status accepted = CheckLoop(loop);
  auto* own = dynamic_cast<SingleThreadEventLoop*>(loop);
  if (accepted.ok() && own == nullptr) {
    accepted = absl::InvalidArgumentError("a socket channel needs a SingleThreadEventLoop");
  }
  if (!accepted.ok()) {
    promise.TryFailure(accepted);
    return;
  }
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  SingleThreadEventLoop* expected = nullptr;
  // acq_rel: publishes the claim to OnLoopOrUnregistered() readers. Of racing
  // registrations exactly one wins; later operations queue behind it, in order.
  if (!loop_.compare_exchange_strong(expected, own, std::memory_order_acq_rel)) {
    promise.TryFailure(absl::FailedPreconditionError("channel is already registered"));
    return;
  }
  OnLoopClaimed(own);
  if (own->InEventLoop()) {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = own->Execute([this, self, promise]() mutable {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
  });
  if (!s.ok()) {
    // Release: un-claims the loop that refused the registration.
    loop_.store(nullptr, std::memory_order_release);
    promise.TryFailure(s);
  }
}

void AbstractSocketChannel::FinishRegister(ChannelPromise promise) {
  SingleThreadEventLoop* loop = registered_loop();
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  set_event_loop(loop);
  set_registered(true);
  JoinLoop(loop);
  pipeline().InvokeHandlerAddedIfNeeded();
  promise.TrySuccess();
  pipeline().FireChannelRegistered();
  OnRegistered();
}

void AbstractSocketChannel::JoinLoop(SingleThreadEventLoop* loop) {
  loop->AddChannel(shared_from_this());
}

void AbstractSocketChannel::LeaveLoop(SingleThreadEventLoop* loop) { loop->RemoveChannel(this); }

void AbstractSocketChannel::DoDeregister(ChannelPromise promise) {
  RunOnLoop(
      [this, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        SingleThreadEventLoop* loop = registered_loop();
        if (loop == nullptr || !IsRegistered()) {
          promise.TrySuccess();
          return;
        }
        if (fd_ >= 0) ReleaseFd(loop, fd_);
        set_registered(false);
        promise.TrySuccess();
        pipeline().FireChannelUnregistered();
        // Last: the loop's reference may be the one keeping this channel alive; it is
        // dropped after the current event.
        LeaveLoop(loop);
      },
      &promise);
}

bool AbstractSocketChannel::CloseCommon() {
  if (!IsOpen()) return false;
  bool was_active = IsActive();
  SingleThreadEventLoop* loop = registered_loop();
  if (loop != nullptr && fd_ >= 0) ReleaseFd(loop, fd_);
  // Release: see IsOpen().
  open_.store(false, std::memory_order_release);
  SetActive(false);
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (was_active) pipeline().FireChannelInactive();
  CompleteCloseFuture();
  if (loop != nullptr && IsRegistered()) {
    set_registered(false);
    pipeline().FireChannelUnregistered();
    LeaveLoop(loop);
  }
  return true;
}

}  // namespace gyre
