// The definitions of AbstractServerSocketChannel<Base, Child, Derived>'s members. Included only
// by the .cc file of each transport's server channel, which instantiates the template
// explicitly (the public header declares it extern).
#ifndef GYRE_TRANSPORT_INTERNAL_ABSTRACT_SERVER_SOCKET_CHANNEL_IMPL_H_
#define GYRE_TRANSPORT_INTERNAL_ABSTRACT_SERVER_SOCKET_CHANNEL_IMPL_H_

#include <sys/socket.h>

#include <cerrno>
#include <exception>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/concurrent/internal/status_macros.h"
#include "gyre/transport/abstract_server_socket_channel.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::DoBind(const SocketAddress& local,
                                                      ChannelPromise promise) {
  this->RunOnLoop(
      [this, local, promise]() mutable {
        this->loop_affinity_.AssertOnLoop();
        if (!this->IsOpen()) {
          promise.TryFailure(internal_transport::ClosedError());
          return;
        }
        if (this->IsActive()) {
          promise.TryFailure(absl::FailedPreconditionError("already bound"));
          return;
        }
        if (local.empty()) {
          promise.TryFailure(absl::InvalidArgumentError("bind: unspecified local address"));
          return;
        }
        if (this->fd() < 0) {
          absl::StatusOr<int> sock = internal_transport::OpenTcpSocket(local.family());
          if (!sock.ok()) {
            promise.TryFailure(sock.status());
            return;
          }
          int on = 1;
          if (!this->config().Get(ChannelOption::kSoReuseaddr).has_value()) {
            setsockopt(*sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
          }
          absl::Status applied = this->AdoptFd(*sock);
          if (!applied.ok()) {
            promise.TryFailure(applied);
            return;
          }
        }
        int backlog = this->config().Get(ChannelOption::kSoBacklog).value_or(kDefaultBacklog);
        absl::Status s;
        if (::bind(this->fd(), local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
        } else if (::listen(this->fd(), backlog) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("listen ", local.ToString()));
        }
        if (!s.ok()) {
          promise.TryFailure(s);
          return;
        }
        this->SetActive(true);
        this->CacheAddresses();
        promise.TrySuccess();
        this->pipeline().FireChannelActive();
      },
      &promise);
}

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::DoBeginRead() {
  std::shared_ptr<Channel> self = this->shared_from_this();
  this->RunOnLoop(
      [this, self] {
        this->loop_affinity_.AssertOnLoop();
        if (!this->IsActive()) return;
        read_requested_ = true;
        UpdateAcceptInterest();
      },
      nullptr);
}

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::AcceptEvent() {
  std::shared_ptr<Channel> self = this->shared_from_this();  // alive through the handlers
  if (this->IsOpen()) AcceptReady();
}

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::AcceptReady() {
  read_requested_ = false;
  for (int i = 0; i < kMaxAcceptsPerWakeup && this->IsOpen(); ++i) {
    int fd = ::accept4(this->fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      InitChild(fd);
      continue;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) break;
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
      BackOff();
      this->pipeline().FireExceptionCaught(absl::ResourceExhaustedError(
          absl::StrCat(internal_transport::ErrnoStatus(err, "accept").message(),
                       "; accepting again in ", absl::FormatDuration(kAcceptBackoff))));
      break;
    }
    this->pipeline().FireExceptionCaught(internal_transport::ErrnoStatus(err, "accept"));
    break;
  }
  if (!this->IsOpen()) return;
  // The head asks for the next read here (AUTO_READ); during a back-off it counts once
  // the back-off ends.
  this->pipeline().FireChannelReadComplete();
  if (this->IsOpen()) UpdateAcceptInterest();
}

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::BackOff() {
  backoffs_.fetch_add(1, std::memory_order_relaxed);
  backing_off_ = true;
  UpdateAcceptInterest();
  std::weak_ptr<Channel> weak = this->shared_from_this();
  this->registered_loop()->Schedule(
      [weak, this] {
        this->loop_affinity_.AssertOnLoop();
        std::shared_ptr<Channel> alive = weak.lock();
        if (alive == nullptr || !this->IsOpen()) return;
        backing_off_ = false;
        if (this->config().auto_read()) read_requested_ = true;
        UpdateAcceptInterest();
      },
      kAcceptBackoff);
}

template <typename Base, typename Child, typename Derived>
void AbstractServerSocketChannel<Base, Child, Derived>::InitChild(int fd) {
  accepted_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<Child> child = Child::CreateAccepted(this, fd);
  if (setup_.deliver_to_pipeline) {
    this->pipeline().FireChannelRead(std::shared_ptr<Channel>(std::move(child)));
    return;
  }
  for (const ChannelOptionSetting& s : setup_.options) {
    absl::Status applied = child->config().SetValue(s);
    if (!applied.ok()) GYRE_LOG(WARNING) << "child option " << s.name << ": " << applied;
  }
  if (setup_.initializer) {
    absl::Status thrown =
        internal::CatchAsStatus("child initializer", [&] { setup_.initializer(*child); });
    if (!thrown.ok()) {
      GYRE_LOG(WARNING) << thrown.message();
      child->Close();
      return;
    }
  }
  EventLoopGroup* group = setup_.group != nullptr ? setup_.group : DefaultChildGroup();
  if (group == nullptr) {
    GYRE_LOG(WARNING) << "server channel " << this->id().AsShortText()
                      << ": no child group; closing the accepted channel";
    child->Close();
    return;
  }
  ChannelFuture registered = group->Register(child);
  registered.AddListener([child](const ChannelFuture& f) {
    if (!f.IsSuccess()) {
      GYRE_LOG(WARNING) << "cannot register accepted channel: " << f.Cause();
      child->Close();
    }
  });
}

}  // namespace gyre

#endif  // GYRE_TRANSPORT_INTERNAL_ABSTRACT_SERVER_SOCKET_CHANNEL_IMPL_H_
