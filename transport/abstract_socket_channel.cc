#include "gyre/transport/abstract_socket_channel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {
namespace {

// A status equal to `s` that shares no reference count with it. A failed connect's
// promise gets one: the loop goes on copying `s` (closing the channel, failing its
// writes) after it let go of the promise, while the thread that awaits the connect may
// drop the promise's status last. The count itself is correct, but its decrement runs
// inside Debian's Abseil, which the race detector does not see, so a shared count
// would read as a race between the loop's increment and that thread's delete.
absl::Status Unshared(const absl::Status& s) {
  absl::Status copy(s.code(), s.message());
  s.ForEachPayload([&copy](absl::string_view url, const absl::Cord& payload) {
    copy.SetPayload(url, payload);
  });
  return copy;
}

}  // namespace

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

void AbstractSocketChannel::RunOnLoop(absl::AnyInvocable<void()> fn, ChannelPromise* promise) {
  if (OnLoopOrUnregistered()) {
    fn();
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  absl::Status s = registered_loop()->Execute([self, fn = std::move(fn)]() mutable { fn(); });
  if (!s.ok() && promise != nullptr) FailWrite(*promise, s);  // a void one: to the pipeline
}

absl::Status AbstractSocketChannel::EnsureSocket(int family) {
  if (fd_ >= 0) return absl::OkStatus();
  absl::StatusOr<int> sock = internal_transport::OpenTcpSocket(family);
  if (!sock.ok()) return sock.status();
  return AdoptFd(*sock);
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
    promise.TryFailure(internal_transport::ClosedError());
    return;
  }
  SingleThreadEventLoop* expected = nullptr;
  // acq_rel: publishes the claim to OnLoopOrUnregistered() readers. Of racing
  // registrations exactly one wins; later operations queue behind it, in order.
  if (!loop_.compare_exchange_strong(expected, own, std::memory_order_acq_rel)) {
    promise.TryFailure(absl::FailedPreconditionError(
        "channel is already registered (a channel belongs to one event loop for life; it "
        "cannot be registered again, even after Deregister)"));
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
    promise.TryFailure(internal_transport::ClosedError());
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

void AbstractSocketChannel::DoBind(const SocketAddress& local, ChannelPromise promise) {
  RunOnLoop(
      [this, local, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        if (!IsOpen()) {
          promise.TryFailure(internal_transport::ClosedError());
          return;
        }
        absl::Status s = EnsureSocket(local.family());
        if (s.ok() && ::bind(fd_, local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
        }
        if (!s.ok()) {
          promise.TryFailure(s);
          return;
        }
        CacheAddresses();
        promise.TrySuccess();
      },
      &promise);
}

void AbstractSocketChannel::DoConnect(const SocketAddress& remote, const SocketAddress& local,
                                      ChannelPromise promise) {
  RunOnLoop(
      [this, remote, local, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        ConnectOnLoop(remote, local, std::move(promise));
      },
      &promise);
}

void AbstractSocketChannel::ConnectOnLoop(const SocketAddress& remote, const SocketAddress& local,
                                          ChannelPromise promise) {
  if (!IsOpen()) {
    promise.TryFailure(internal_transport::ClosedError());
    return;
  }
  if (connect_promise_.has_value()) {
    promise.TryFailure(absl::FailedPreconditionError("a connect is already in progress"));
    return;
  }
  if (IsActive()) {
    promise.TryFailure(absl::FailedPreconditionError("channel is already connected"));
    return;
  }
  if (remote.empty()) {
    promise.TryFailure(absl::InvalidArgumentError("connect: unspecified remote address"));
    return;
  }
  SingleThreadEventLoop* loop = registered_loop();
  if (loop == nullptr) {
    promise.TryFailure(absl::FailedPreconditionError("connect: channel is not registered"));
    return;
  }
  absl::Status s = EnsureSocket(remote.family());
  if (s.ok() && !local.empty() && ::bind(fd_, local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
    s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
  }
  if (!s.ok()) {
    promise.TryFailure(s);
    CloseWithCause(s);
    return;
  }
  // The socket is non-blocking: the loop learns the outcome from the socket, so a
  // Close or the timeout can still run meanwhile.
  if (::connect(fd_, remote.sockaddr_ptr(), remote.sockaddr_len()) == 0) {
    ConnectDone();
    MarkConnected();
    promise.TrySuccess();
    BecomeActive();
    return;
  }
  if (errno != EINPROGRESS) {
    absl::Status cause =
        internal_transport::ErrnoStatus(errno, absl::StrCat("connect ", remote.ToString()));
    promise.TryFailure(cause);
    CloseWithCause(cause);
    return;
  }
  connect_promise_ = std::move(promise);
  WaitForConnect();
  absl::Duration timeout = config().connect_timeout();
  if (timeout > absl::ZeroDuration() && timeout != absl::InfiniteDuration()) {
    std::weak_ptr<Channel> weak = shared_from_this();
    std::string where = remote.ToString();
    connect_timeout_ = loop->Schedule(
        [this, weak, where, timeout] {
          loop_affinity_.AssertOnLoop();
          std::shared_ptr<Channel> alive = weak.lock();
          if (alive == nullptr || !connect_promise_.has_value()) return;
          FailConnect(absl::DeadlineExceededError(absl::StrCat(
              "connect to ", where, " timed out after ", absl::FormatDuration(timeout))));
        },
        timeout);
  }
}

ChannelPromise AbstractSocketChannel::TakeConnectPromise() {
  ChannelPromise promise = std::move(*connect_promise_);
  connect_promise_.reset();
  if (connect_timeout_.has_value()) {
    connect_timeout_->Cancel();
    connect_timeout_.reset();
  }
  return promise;
}

void AbstractSocketChannel::FinishConnect() {
  if (!connect_promise_.has_value()) return;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    FailConnect(internal_transport::ErrnoStatus(err, "connect"));
    return;
  }
  ChannelPromise promise = TakeConnectPromise();
  ConnectDone();
  // Active, with its addresses known, before the connect future's listeners run.
  MarkConnected();
  promise.TrySuccess();
  BecomeActive();
}

void AbstractSocketChannel::FailConnect(absl::Status cause) {
  if (!connect_promise_.has_value()) return;
  TakeConnectPromise().TryFailure(Unshared(cause));
  CloseWithCause(std::move(cause));
}

void AbstractSocketChannel::AbortConnect(const absl::Status& cause) {
  if (!connect_promise_.has_value()) return;
  TakeConnectPromise().TryFailure(cause.ok() ? internal_transport::ClosedError() : Unshared(cause));
}

void AbstractSocketChannel::MarkConnected() {
  SetActive(true);
  CacheAddresses();
}

void AbstractSocketChannel::BecomeActive() { pipeline().FireChannelActive(); }

void AbstractSocketChannel::CloseWithCause(absl::Status cause) { CloseCommon(); }

void AbstractSocketChannel::DoClose(ChannelPromise promise) {
  if (!IsOpen()) {
    promise.TrySuccess();
    return;
  }
  std::shared_ptr<Channel> self = shared_from_this();
  RunOnLoop(
      [this, self, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        CloseWithCause(absl::OkStatus());
        promise.TrySuccess();
      },
      &promise);
}

}  // namespace gyre
