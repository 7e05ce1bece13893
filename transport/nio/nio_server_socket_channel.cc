#include "gyre/transport/nio/nio_server_socket_channel.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

std::shared_ptr<NioServerSocketChannel> NioServerSocketChannel::Create(ChildSetup setup) {
  return std::shared_ptr<NioServerSocketChannel>(new NioServerSocketChannel(std::move(setup)));
}

std::shared_ptr<NioServerSocketChannel> NioServerSocketChannel::Create() {
  ChildSetup setup;
  setup.deliver_to_pipeline = true;
  return Create(std::move(setup));
}

NioServerSocketChannel::NioServerSocketChannel(ChildSetup setup)
    : AbstractNioChannel(nullptr, -1), setup_(std::move(setup)) {}

NioServerSocketChannel::~NioServerSocketChannel() = default;

void NioServerSocketChannel::ServerUnsafe::Bind(const SocketAddress& local,
                                                ChannelPromise promise) {
  NioServerSocketChannel* ch = ch_;
  ch->RunOnLoop(
      [ch, local, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsOpen()) {
          promise.TryFailure(absl::FailedPreconditionError("channel is closed"));
          return;
        }
        if (ch->IsActive()) {
          promise.TryFailure(absl::FailedPreconditionError("already bound"));
          return;
        }
        if (local.empty()) {
          promise.TryFailure(absl::InvalidArgumentError("bind: unspecified local address"));
          return;
        }
        if (ch->fd() < 0) {
          absl::StatusOr<int> sock = internal_transport::OpenTcpSocket(local.family());
          if (!sock.ok()) {
            promise.TryFailure(sock.status());
            return;
          }
          int on = 1;
          if (!ch->config().Get(ChannelOption::kSoReuseaddr).has_value()) {
            setsockopt(*sock, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
          }
          absl::Status applied = ch->AdoptFd(*sock);
          if (!applied.ok()) {
            promise.TryFailure(applied);
            return;
          }
        }
        int backlog = ch->config().Get(ChannelOption::kSoBacklog).value_or(kDefaultBacklog);
        absl::Status s;
        if (::bind(ch->fd(), local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
        } else if (::listen(ch->fd(), backlog) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("listen ", local.ToString()));
        }
        if (!s.ok()) {
          promise.TryFailure(s);
          return;
        }
        ch->SetActive(true);
        ch->CacheAddresses();
        promise.TrySuccess();
        ch->pipeline().FireChannelActive();
      },
      &promise);
}

void NioServerSocketChannel::ServerUnsafe::BeginRead() {
  NioServerSocketChannel* ch = ch_;
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsActive()) return;
        ch->read_requested_ = true;
        if (!ch->backing_off_) ch->AddInterest(EPOLLIN);
      },
      nullptr);
}

void NioServerSocketChannel::ServerUnsafe::Close(ChannelPromise promise) {
  NioServerSocketChannel* ch = ch_;
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        ch->CloseCommon();
        promise.TrySuccess();
      },
      &promise);
}

void NioServerSocketChannel::OnIoEvent(uint32_t events) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  std::shared_ptr<Channel> self = shared_from_this();
  if (!IsOpen()) return;
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) AcceptReady();
}

void NioServerSocketChannel::AcceptReady() {
  read_requested_ = false;
  for (int i = 0; i < kMaxAcceptsPerWakeup && IsOpen(); ++i) {
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
      pipeline().FireExceptionCaught(absl::ResourceExhaustedError(
          absl::StrCat(internal_transport::ErrnoStatus(err, "accept").message(),
                       "; accepting again in ", absl::FormatDuration(kAcceptBackoff))));
      return;
    }
    pipeline().FireExceptionCaught(internal_transport::ErrnoStatus(err, "accept"));
    break;
  }
  if (!IsOpen()) return;
  pipeline().FireChannelReadComplete();
  if (!read_requested_ && IsOpen() && !backing_off_) RemoveInterest(EPOLLIN);
}

void NioServerSocketChannel::BackOff() {
  backoffs_.fetch_add(1, std::memory_order_relaxed);
  backing_off_ = true;
  RemoveInterest(EPOLLIN);
  std::weak_ptr<Channel> weak = shared_from_this();
  NioServerSocketChannel* ch = this;
  nio_loop()->Schedule(
      [weak, ch] {
        ch->loop_affinity_.AssertOnLoop();
        std::shared_ptr<Channel> alive = weak.lock();
        if (alive == nullptr || !ch->IsOpen()) return;
        ch->backing_off_ = false;
        if (ch->config().auto_read() || ch->read_requested_) ch->AddInterest(EPOLLIN);
      },
      kAcceptBackoff);
}

void NioServerSocketChannel::InitChild(int fd) {
  accepted_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<NioSocketChannel> child = NioSocketChannel::CreateAccepted(this, fd);
  if (setup_.deliver_to_pipeline) {
    pipeline().FireChannelRead(std::shared_ptr<Channel>(std::move(child)));
    return;
  }
  for (const ChannelOptionSetting& s : setup_.options) {
    absl::Status applied = child->config().SetValue(s);
    if (!applied.ok()) GYRE_LOG(WARNING) << "child option " << s.name << ": " << applied;
  }
  if (setup_.initializer) {
    try {
      setup_.initializer(*child);
    } catch (const std::exception& e) {
      GYRE_LOG(WARNING) << "child initializer threw: " << e.what();
      child->Close();
      return;
    } catch (...) {
      GYRE_LOG(WARNING) << "child initializer threw a non-std exception";
      child->Close();
      return;
    }
  }
  EventLoopGroup* group = setup_.group != nullptr ? setup_.group : nio_loop();
  ChannelFuture registered = group->Register(child);
  registered.AddListener([child](const ChannelFuture& f) {
    if (!f.IsSuccess()) {
      GYRE_LOG(WARNING) << "cannot register accepted channel: " << f.Cause();
      child->Close();
    }
  });
}

}  // namespace gyre
