#include "gyre/transport/nio/abstract_nio_channel.h"

#include <unistd.h>

#include <utility>

#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/nio/socket_util.h"

namespace gyre {

AbstractNioChannel::AbstractNioChannel(Channel* parent, int fd) : Channel(parent), fd_(fd) {
  // Options set later go to the socket at once, on the loop (or here while unregistered).
  config().SetApplier([this](const ChannelOptionSetting& setting) -> absl::Status {
    if (OnLoopOrUnregistered()) {
      loop_affinity_.AssertOnLoop();
      return fd_ >= 0 ? internal_nio::ApplySocketOption(fd_, setting) : absl::OkStatus();
    }
    std::shared_ptr<Channel> self = shared_from_this();
    return nio_loop()->Execute([this, self, setting] {
      loop_affinity_.AssertOnLoop();
      if (fd_ < 0) return;
      absl::Status s = internal_nio::ApplySocketOption(fd_, setting);
      if (!s.ok()) GYRE_LOG(WARNING) << "channel " << id().AsShortText() << ": " << s;
    });
  });
  config().SetAutoReadListener([this](bool on) {
    if (on) {
      Read();
      return;
    }
    std::shared_ptr<Channel> self = shared_from_this();
    RunOnLoop(
        [this, self] {
          loop_affinity_.AssertOnLoop();
          RemoveInterest(EPOLLIN | EPOLLRDHUP);
        },
        nullptr);
  });
}

AbstractNioChannel::~AbstractNioChannel() {
  loop_affinity_.AssumeExclusive();  // the last reference is gone: nothing else runs here
  if (fd_ >= 0) close(fd_);
}

SocketAddress AbstractNioChannel::local_address() const {
  internal::MutexLock lock(&addr_mu_);
  return local_;
}

SocketAddress AbstractNioChannel::remote_address() const {
  internal::MutexLock lock(&addr_mu_);
  return remote_;
}

void AbstractNioChannel::CacheAddresses() {
  if (fd_ < 0) return;
  SocketAddress local = internal_nio::LocalAddress(fd_);
  SocketAddress remote = internal_nio::PeerAddress(fd_);
  internal::MutexLock lock(&addr_mu_);
  local_ = local;
  if (!remote.empty()) remote_ = remote;
}

bool AbstractNioChannel::OnLoopOrUnregistered() const {
  NioEventLoop* loop = nio_loop();
  return loop == nullptr || loop->InEventLoop();
}

void AbstractNioChannel::RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise) {
  if (OnLoopOrUnregistered()) {
    fn();
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = nio_loop()->Execute([self, fn = std::move(fn)]() mutable { fn(); });
  if (!s.ok() && promise != nullptr) promise->TryFailure(s);
}

absl::Status AbstractNioChannel::AdoptFd(int fd) {
  fd_ = fd;
  for (const ChannelOptionSetting& s : config().Settings()) {
    absl::Status applied = internal_nio::ApplySocketOption(fd_, s);
    if (!applied.ok()) return applied;
  }
  return absl::OkStatus();
}

void AbstractNioChannel::DoRegister(EventLoop* loop, ChannelPromise promise) {
  auto* nio = dynamic_cast<NioEventLoop*>(loop);
  if (nio == nullptr) {
    promise.TryFailure(absl::InvalidArgumentError("a nio channel needs a NioEventLoop"));
    return;
  }
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  // Claims the loop first, on the calling thread: of racing registrations exactly one
  // wins, and from here on every operation hops to that loop (queued behind the
  // registration, so they keep their order).
  NioEventLoop* expected = nullptr;
  // acq_rel: publishes the claim to OnLoopOrUnregistered() readers.
  if (!nio_loop_.compare_exchange_strong(expected, nio, std::memory_order_acq_rel)) {
    promise.TryFailure(absl::FailedPreconditionError("channel is already registered"));
    return;
  }
  if (nio->InEventLoop()) {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = nio->Execute([this, self, promise]() mutable {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
  });
  if (!s.ok()) {
    // Release: un-claims the loop that refused the registration.
    nio_loop_.store(nullptr, std::memory_order_release);
    promise.TryFailure(s);
  }
}

void AbstractNioChannel::FinishRegister(ChannelPromise promise) {
  NioEventLoop* nio = nio_loop();
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  set_event_loop(nio);
  set_registered(true);
  nio->AddChannel(shared_from_this());
  applied_interest_ = kNoInterestApplied;
  ApplyInterest();
  pipeline().InvokeHandlerAddedIfNeeded();
  promise.TrySuccess();
  pipeline().FireChannelRegistered();
  OnRegistered();
}

void AbstractNioChannel::DoDeregister(ChannelPromise promise) {
  RunOnLoop(
      [this, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        NioEventLoop* loop = nio_loop();
        if (loop == nullptr || !IsRegistered()) {
          promise.TrySuccess();
          return;
        }
        if (fd_ >= 0) loop->RemoveFd(fd_);
        applied_interest_ = kNoInterestApplied;
        set_registered(false);
        promise.TrySuccess();
        pipeline().FireChannelUnregistered();
        // Last: the loop's reference may be the one keeping this channel alive; it is
        // dropped after the current I/O batch.
        loop->RemoveChannel(this);
      },
      &promise);
}

void AbstractNioChannel::AddInterest(uint32_t events) {
  interest_ |= events;
  ApplyInterest();
}

void AbstractNioChannel::RemoveInterest(uint32_t events) {
  interest_ &= ~events;
  ApplyInterest();
}

void AbstractNioChannel::ApplyInterest() {
  NioEventLoop* loop = nio_loop();
  if (loop == nullptr || fd_ < 0 || !IsOpen() || !IsRegistered()) return;
  if (interest_ == applied_interest_) return;
  absl::Status s = loop->SetInterest(fd_, interest_, this);
  applied_interest_ = s.ok() ? interest_ : kNoInterestApplied;
  if (!s.ok()) pipeline().FireExceptionCaught(s);
}

bool AbstractNioChannel::CloseCommon() {
  if (!IsOpen()) return false;
  bool was_active = IsActive();
  NioEventLoop* loop = nio_loop();
  if (loop != nullptr && fd_ >= 0) loop->RemoveFd(fd_);
  applied_interest_ = kNoInterestApplied;
  // Release: see IsOpen().
  open_.store(false, std::memory_order_release);
  SetActive(false);
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  interest_ = 0;
  if (was_active) pipeline().FireChannelInactive();
  CompleteCloseFuture();
  if (loop != nullptr && IsRegistered()) {
    set_registered(false);
    pipeline().FireChannelUnregistered();
    loop->RemoveChannel(this);
  }
  return true;
}

}  // namespace gyre
