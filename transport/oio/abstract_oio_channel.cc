#include "gyre/transport/oio/abstract_oio_channel.h"

#include <unistd.h>

#include <utility>

#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/nio/socket_util.h"

namespace gyre {

AbstractOioChannel::AbstractOioChannel(Channel* parent, int fd) : Channel(parent), fd_(fd) {
  // Options set later go to the socket at once, on the loop (or here while unregistered).
  config().SetApplier([this](const ChannelOptionSetting& setting) -> absl::Status {
    if (OnLoopOrUnregistered()) {
      loop_affinity_.AssertOnLoop();
      return fd_ >= 0 ? internal_nio::ApplySocketOption(fd_, setting) : absl::OkStatus();
    }
    std::shared_ptr<Channel> self = shared_from_this();
    return oio_loop()->Execute([this, self, setting] {
      loop_affinity_.AssertOnLoop();
      if (fd_ < 0) return;
      absl::Status s = internal_nio::ApplySocketOption(fd_, setting);
      if (!s.ok()) GYRE_LOG(WARNING) << "channel " << id().AsShortText() << ": " << s;
    });
  });
  config().SetAutoReadListener([this](bool on) {
    if (on) Read();
    // Turning it off needs nothing here: the head stops asking for reads, and the
    // read already asked for is the last one.
  });
}

AbstractOioChannel::~AbstractOioChannel() {
  loop_affinity_.AssumeExclusive();  // the last reference is gone: nothing else runs here
  if (fd_ >= 0) close(fd_);
}

SocketAddress AbstractOioChannel::local_address() const {
  internal::MutexLock lock(&addr_mu_);
  return local_;
}

SocketAddress AbstractOioChannel::remote_address() const {
  internal::MutexLock lock(&addr_mu_);
  return remote_;
}

void AbstractOioChannel::CacheAddresses() {
  if (fd_ < 0) return;
  SocketAddress local = internal_nio::LocalAddress(fd_);
  SocketAddress remote = internal_nio::PeerAddress(fd_);
  internal::MutexLock lock(&addr_mu_);
  local_ = local;
  if (!remote.empty()) remote_ = remote;
}

bool AbstractOioChannel::OnLoopOrUnregistered() const {
  ThreadPerChannelEventLoop* loop = oio_loop();
  return loop == nullptr || loop->InEventLoop();
}

void AbstractOioChannel::RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise) {
  if (OnLoopOrUnregistered()) {
    fn();
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = oio_loop()->Execute([self, fn = std::move(fn)]() mutable { fn(); });
  if (!s.ok() && promise != nullptr) promise->TryFailure(s);
}

absl::Status AbstractOioChannel::AdoptFd(int fd) {
  fd_ = fd;
  for (const ChannelOptionSetting& s : config().Settings()) {
    absl::Status applied = internal_nio::ApplySocketOption(fd_, s);
    if (!applied.ok()) return applied;
  }
  return absl::OkStatus();
}

void AbstractOioChannel::DoRegister(EventLoop* loop, ChannelPromise promise) {
  auto* oio = dynamic_cast<ThreadPerChannelEventLoop*>(loop);
  if (oio == nullptr) {
    promise.TryFailure(absl::InvalidArgumentError("an oio channel needs a ThreadPerChannelEventLoop"));
    return;
  }
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  ThreadPerChannelEventLoop* expected = nullptr;
  std::shared_ptr<ThreadPerChannelEventLoop> ref = oio->shared_from_this();
  // acq_rel: publishes the claim to OnLoopOrUnregistered() readers. Of racing
  // registrations exactly one wins; later operations queue behind it, in order.
  if (!oio_loop_.compare_exchange_strong(expected, oio, std::memory_order_acq_rel)) {
    promise.TryFailure(absl::FailedPreconditionError("channel is already registered"));
    return;
  }
  loop_ref_ = std::move(ref);
  if (oio->InEventLoop()) {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = oio->Execute([this, self, promise]() mutable {
    loop_affinity_.AssertOnLoop();
    FinishRegister(std::move(promise));
  });
  if (!s.ok()) promise.TryFailure(s);
}

void AbstractOioChannel::FinishRegister(ChannelPromise promise) {
  ThreadPerChannelEventLoop* loop = oio_loop();
  if (!IsOpen()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
    return;
  }
  set_event_loop(loop);
  set_registered(true);
  loop->Attach(shared_from_this(), this);
  pipeline().InvokeHandlerAddedIfNeeded();
  promise.TrySuccess();
  pipeline().FireChannelRegistered();
  OnRegistered();
}

void AbstractOioChannel::DoDeregister(ChannelPromise promise) {
  RunOnLoop(
      [this, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        ThreadPerChannelEventLoop* loop = oio_loop();
        if (loop == nullptr || !IsRegistered()) {
          promise.TrySuccess();
          return;
        }
        set_registered(false);
        promise.TrySuccess();
        pipeline().FireChannelUnregistered();
        loop->Detach();
      },
      &promise);
}

bool AbstractOioChannel::CloseCommon() {
  if (!IsOpen()) return false;
  bool was_active = IsActive();
  // Release: see IsOpen().
  open_.store(false, std::memory_order_release);
  SetActive(false);
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (was_active) pipeline().FireChannelInactive();
  CompleteCloseFuture();
  ThreadPerChannelEventLoop* loop = oio_loop();
  if (loop != nullptr && IsRegistered()) {
    set_registered(false);
    pipeline().FireChannelUnregistered();
    loop->Detach();
  }
  return true;
}

}  // namespace gyre
