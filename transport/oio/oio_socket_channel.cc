#include "gyre/transport/oio/oio_socket_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
constexpr int kMaxIov = 64;
constexpr int kWriteSpins = 16;
// recv calls per wake-up that drop a draining channel's inbound bytes.
constexpr int kDiscardReadsPerEvent = 16;

absl::Status ClosedError() { return absl::FailedPreconditionError("channel is closed"); }

}  // namespace

std::shared_ptr<OioSocketChannel> OioSocketChannel::Create() {
  return std::shared_ptr<OioSocketChannel>(new OioSocketChannel(nullptr, -1));
}

std::shared_ptr<OioSocketChannel> OioSocketChannel::CreateAccepted(Channel* parent, int fd) {
  std::shared_ptr<OioSocketChannel> ch(new OioSocketChannel(parent, fd));
  ch->loop_affinity_.AssertOnLoop();  // not registered yet: this thread has it
  ch->SetActive(true);
  ch->CacheAddresses();
  return ch;
}

OioSocketChannel::OioSocketChannel(Channel* parent, int fd) : AbstractOioChannel(parent, fd) {}

OioSocketChannel::~OioSocketChannel() = default;

absl::Status OioSocketChannel::EnsureSocket(int family) {
  if (fd() >= 0) return absl::OkStatus();
  absl::StatusOr<int> sock = internal_transport::OpenTcpSocket(family);
  if (!sock.ok()) return sock.status();
  return AdoptFd(*sock);
}

short OioSocketChannel::PollEvents() const {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (fd() < 0 || !IsOpen()) return 0;
  if (connect_promise_.has_value()) return POLLOUT;
  if (!IsActive()) return 0;
  short events = 0;
  if (read_requested_ || (draining_ && !drain_input_done_)) events |= POLLIN;
  if (!flushed_.empty()) events |= POLLOUT;
  return events;
}

void OioSocketChannel::OnPollEvent(short revents) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  std::shared_ptr<Channel> self = shared_from_this();  // alive through the handlers
  if (!IsOpen()) return;
  if (draining_) {
    DrainEvent(revents);
    return;
  }
  if (connect_promise_.has_value()) {
    FinishConnect();
    return;
  }
  if ((revents & (POLLIN | POLLERR | POLLHUP)) != 0) ReadReady();
  if (IsOpen() && (revents & POLLOUT) != 0) DoWrite();
}

bool OioSocketChannel::BeginShutdownDrain() {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (!IsOpen() || !IsActive() || connect_promise_.has_value() ||
      (flushed_.empty() && unflushed_.empty())) {
    return false;  // the loop closes it
  }
  draining_ = true;
  read_requested_ = false;  // no new inbound messages; DiscardInbound drops the bytes
  FlushOnLoop();            // DoWrite closes the channel if it empties the buffer
  return IsOpen();
}

void OioSocketChannel::DrainEvent(short revents) {
  // Writable, or an error or hang-up: a write reports the socket's error (and closes).
  if ((revents & (POLLOUT | POLLERR | POLLHUP)) != 0) DoWrite();
  if (IsOpen() && (revents & POLLIN) != 0 && !drain_input_done_) DiscardInbound();
  if (!IsOpen() || (revents & (POLLERR | POLLHUP | POLLNVAL)) == 0) return;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  DoClose(err != 0 ? internal_transport::ErrnoStatus(err, "socket")
                   : absl::UnavailableError("connection hung up while draining writes"));
}

void OioSocketChannel::DiscardInbound() {
  // Closing a socket with unread inbound bytes sends a reset, and the kernel then drops
  // what it still holds of the drained writes: so read and drop what the peer sends.
  for (int i = 0; i < kDiscardReadsPerEvent; ++i) {
    if (read_buf_.empty()) read_buf_.resize(kReadChunk);
    ssize_t n = ::recv(fd(), read_buf_.data(), read_buf_.size(), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0) {
      drain_input_done_ = true;  // the peer's FIN: it sends nothing more
      return;
    }
    DoClose(internal_transport::ErrnoStatus(errno, "recv"));
    return;
  }
}

void OioSocketChannel::OnRegistered() {
  // An accepted channel is active from the start.
  if (IsActive()) pipeline().FireChannelActive();
}

void OioSocketChannel::BecomeActive() {
  SetActive(true);
  CacheAddresses();
  pipeline().FireChannelActive();
  // Writes flushed while connecting go now.
  if (IsOpen() && !flushed_.empty()) DoWrite();
}

void OioSocketChannel::OioUnsafe::Bind(const SocketAddress& local, ChannelPromise promise) {
  OioSocketChannel* ch = ch_;
  ch->RunOnLoop(
      [ch, local, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsOpen()) {
          promise.TryFailure(ClosedError());
          return;
        }
        absl::Status s = ch->EnsureSocket(local.family());
        if (s.ok() && ::bind(ch->fd(), local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
        }
        if (!s.ok()) {
          promise.TryFailure(s);
          return;
        }
        ch->CacheAddresses();
        promise.TrySuccess();
      },
      &promise);
}

void OioSocketChannel::OioUnsafe::Connect(const SocketAddress& remote, const SocketAddress& local,
                                          ChannelPromise promise) {
  OioSocketChannel* ch = ch_;
  ch->RunOnLoop(
      [ch, remote, local, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsOpen()) {
          promise.TryFailure(ClosedError());
          return;
        }
        if (ch->connect_promise_.has_value()) {
          promise.TryFailure(absl::FailedPreconditionError("a connect is already in progress"));
          return;
        }
        if (ch->IsActive()) {
          promise.TryFailure(absl::FailedPreconditionError("channel is already connected"));
          return;
        }
        if (remote.empty()) {
          promise.TryFailure(absl::InvalidArgumentError("connect: unspecified remote address"));
          return;
        }
        if (ch->oio_loop() == nullptr) {
          promise.TryFailure(absl::FailedPreconditionError("connect: channel is not registered"));
          return;
        }
        absl::Status s = ch->EnsureSocket(remote.family());
        if (s.ok() && !local.empty() &&
            ::bind(ch->fd(), local.sockaddr_ptr(), local.sockaddr_len()) != 0) {
          s = internal_transport::ErrnoStatus(errno, absl::StrCat("bind ", local.ToString()));
        }
        if (!s.ok()) {
          promise.TryFailure(s);
          ch->DoClose(s);
          return;
        }
        // The socket is non-blocking: the loop waits for the outcome in poll, so a
        // Close or the timeout can still run meanwhile.
        int rc = ::connect(ch->fd(), remote.sockaddr_ptr(), remote.sockaddr_len());
        if (rc == 0) {
          promise.TrySuccess();
          ch->BecomeActive();
          return;
        }
        if (errno != EINPROGRESS) {
          absl::Status cause =
              internal_transport::ErrnoStatus(errno, absl::StrCat("connect ", remote.ToString()));
          promise.TryFailure(cause);
          ch->DoClose(cause);
          return;
        }
        ch->connect_promise_ = promise;
        absl::Duration timeout = ch->config().connect_timeout();
        if (timeout > absl::ZeroDuration() && timeout != absl::InfiniteDuration()) {
          std::weak_ptr<Channel> weak = ch->shared_from_this();
          std::string where = remote.ToString();
          ch->connect_timeout_ = ch->oio_loop()->Schedule(
              [ch, weak, where, timeout] {
                ch->loop_affinity_.AssertOnLoop();
                std::shared_ptr<Channel> alive = weak.lock();
                if (alive == nullptr || !ch->connect_promise_.has_value()) return;
                ch->FailConnect(absl::DeadlineExceededError(absl::StrCat(
                    "connect to ", where, " timed out after ", absl::FormatDuration(timeout))));
              },
              timeout);
        }
      },
      &promise);
}

void OioSocketChannel::FinishConnect() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    FailConnect(internal_transport::ErrnoStatus(err, "connect"));
    return;
  }
  ChannelPromise promise = std::move(*connect_promise_);
  connect_promise_.reset();
  if (connect_timeout_.has_value()) {
    connect_timeout_->Cancel();
    connect_timeout_.reset();
  }
  promise.TrySuccess();
  BecomeActive();
}

void OioSocketChannel::FailConnect(absl::Status cause) {
  if (!connect_promise_.has_value()) return;
  ChannelPromise promise = std::move(*connect_promise_);
  connect_promise_.reset();
  if (connect_timeout_.has_value()) {
    connect_timeout_->Cancel();
    connect_timeout_.reset();
  }
  promise.TryFailure(cause);
  DoClose(cause);
}

void OioSocketChannel::OioUnsafe::BeginRead() {
  OioSocketChannel* ch = ch_;
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsActive() || ch->draining_) return;
        // The next poll waits for bytes too.
        ch->read_requested_ = true;
      },
      nullptr);
}

void OioSocketChannel::ReadReady() {
  read_requested_ = false;
  if (read_buf_.empty()) read_buf_.resize(kReadChunk);
  const int max_reads = std::max(1, config().max_messages_per_read());
  bool eof = false;
  absl::Status error;
  for (int i = 0; i < max_reads && IsOpen(); ++i) {
    ssize_t n = ::recv(fd(), read_buf_.data(), read_buf_.size(), 0);
    if (n > 0) {
      absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->CopiedBuffer(
          absl::string_view(read_buf_.data(), static_cast<size_t>(n)));
      if (!buf.ok()) {
        error = buf.status();
        break;
      }
      pipeline().FireChannelRead(Message(*std::move(buf)));
      if (static_cast<size_t>(n) < read_buf_.size()) break;
      continue;
    }
    if (n == 0) {
      eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) error = internal_transport::ErrnoStatus(errno, "recv");
    break;
  }
  if (!IsOpen()) return;
  pipeline().FireChannelReadComplete();
  if (!error.ok()) {
    pipeline().FireExceptionCaught(error);
    DoClose(error);
    return;
  }
  // With AUTO_READ on the head asked for the next read (read_requested_) above.
  if (eof) DoClose(absl::OkStatus());
}

void OioSocketChannel::OioUnsafe::Write(Message msg, ChannelPromise promise) {
  OioSocketChannel* ch = ch_;
  auto shared = std::make_shared<Message>(std::move(msg));
  ch->RunOnLoop(
      [ch, shared, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        if (!ch->IsOpen()) {
          promise.TryFailure(ClosedError());
          return;
        }
        ByteBuf buf;
        if (ByteBuf* b = shared->Get<ByteBuf>()) {
          buf = std::move(*b);
        } else if (const std::string* s = shared->Get<std::string>()) {
          absl::StatusOr<ByteBuf> copied = PooledByteBufAllocator::Default()->CopiedBuffer(*s);
          if (!copied.ok()) {
            promise.TryFailure(copied.status());
            return;
          }
          buf = *std::move(copied);
        } else {
          promise.TryFailure(absl::InvalidArgumentError(
              absl::StrCat("OioSocketChannel cannot write a ", shared->type_name())));
          return;
        }
        shared->Reset();
        int64_t size = static_cast<int64_t>(buf.ReadableBytes());
        ch->unflushed_.push_back(Pending{std::move(buf), std::move(promise)});
        ch->AddPending(size);
        // Draining: nothing may be left unflushed when the buffer empties.
        if (ch->draining_) ch->FlushOnLoop();
      },
      &promise);
}

void OioSocketChannel::OioUnsafe::Flush() {
  OioSocketChannel* ch = ch_;
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        ch->FlushOnLoop();
      },
      nullptr);
}

void OioSocketChannel::FlushOnLoop() {
  if (!IsOpen()) return;
  // Data already flushed and not written means the loop waits for room (POLLOUT)
  // or an outer DoWrite is running: either picks the new data up.
  bool waiting = !flushed_.empty();
  while (!unflushed_.empty()) {
    flushed_.push_back(std::move(unflushed_.front()));
    unflushed_.pop_front();
  }
  if (!IsActive() || waiting) return;
  DoWrite();
}

void OioSocketChannel::DoWrite() {
  // A write listener or a writability handler may flush again from inside this call:
  // the outer call then picks up what was added; only it touches the socket.
  if (in_write_) return;
  in_write_ = true;
  std::vector<ChannelPromise> done;
  for (int spin = 0; spin < kWriteSpins && !flushed_.empty() && IsOpen(); ++spin) {
    iovec iov[kMaxIov];
    int count = 0;
    for (auto it = flushed_.begin(); it != flushed_.end() && count < kMaxIov; ++it) {
      count += static_cast<int>(it->buf.ReadableIovecs(
          absl::MakeSpan(iov + count, static_cast<size_t>(kMaxIov - count))));
    }
    ssize_t n = 0;
    if (count > 0) {
      n = ::writev(fd(), iov, count);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // poll waits for room
        in_write_ = false;
        DoClose(internal_transport::ErrnoStatus(errno, "writev"));
        return;
      }
    }
    // Retire what the kernel took (and empty buffers) before any user code runs.
    size_t left = static_cast<size_t>(n);
    int64_t retired = 0;
    while (!flushed_.empty()) {
      Pending& p = flushed_.front();
      size_t readable = p.buf.ReadableBytes();
      if (readable > left) {
        if (left > 0) (void)p.buf.Skip(left);
        retired += static_cast<int64_t>(left);
        break;
      }
      left -= readable;
      retired += static_cast<int64_t>(readable);
      done.push_back(std::move(p.promise));
      flushed_.pop_front();
    }
    // User code from here on (listeners, writability handlers) may write or close.
    if (retired > 0) AddPending(-retired);
    for (ChannelPromise& promise : done) promise.TrySuccess();
    done.clear();
  }
  in_write_ = false;
  // A graceful shutdown's drain is done once every queued write was handed over.
  if (draining_ && IsOpen() && flushed_.empty() && unflushed_.empty()) DoClose(absl::OkStatus());
}

void OioSocketChannel::AddPending(int64_t delta) {
  // Relaxed: the loop is the only writer; readers want a snapshot.
  int64_t now = pending_bytes_.load(std::memory_order_relaxed) + delta;
  pending_bytes_.store(now, std::memory_order_relaxed);
  if (delta > 0 && now > config().high_water_mark() && IsWritable()) {
    SetWritable(false);
  } else if (delta < 0 && now < config().low_water_mark() && !IsWritable()) {
    SetWritable(true);
  }
}

void OioSocketChannel::SetWritable(bool writable) {
  writable_.store(writable, std::memory_order_relaxed);
  pipeline().FireChannelWritabilityChanged();
}

void OioSocketChannel::OioUnsafe::Close(ChannelPromise promise) {
  OioSocketChannel* ch = ch_;
  if (!ch->IsOpen()) {
    // Already closed (its loop may have terminated): nothing to hop for.
    promise.TrySuccess();
    return;
  }
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        ch->DoClose(absl::OkStatus());
        promise.TrySuccess();
      },
      &promise);
}

void OioSocketChannel::DoClose(absl::Status cause) {
  if (!IsOpen()) return;
  std::shared_ptr<Channel> self = shared_from_this();
  if (connect_timeout_.has_value()) {
    connect_timeout_->Cancel();
    connect_timeout_.reset();
  }
  if (connect_promise_.has_value()) {
    ChannelPromise p = std::move(*connect_promise_);
    connect_promise_.reset();
    p.TryFailure(cause.ok() ? ClosedError() : cause);
  }
  std::deque<Pending> doomed;
  for (auto& p : flushed_) doomed.push_back(std::move(p));
  for (auto& p : unflushed_) doomed.push_back(std::move(p));
  flushed_.clear();
  unflushed_.clear();
  read_requested_ = false;
  CloseCommon();
  absl::Status failure = cause.ok() ? ClosedError() : cause;
  // Relaxed: as in AddPending. A closed channel fires no writability change.
  pending_bytes_.store(0, std::memory_order_relaxed);
  for (Pending& p : doomed) p.promise.TryFailure(failure);
}

}  // namespace gyre
