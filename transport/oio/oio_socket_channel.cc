#include "gyre/transport/oio/oio_socket_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {
namespace {

constexpr size_t kReadChunk = 64 * 1024;
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
  ch->MarkConnected();
  return ch;
}

OioSocketChannel::OioSocketChannel(Channel* parent, int fd) : AbstractOioChannel(parent, fd) {}

OioSocketChannel::~OioSocketChannel() = default;

short OioSocketChannel::PollEvents() const {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (fd() < 0 || !IsOpen()) return 0;
  if (IsConnecting()) return POLLOUT;
  if (!IsActive()) return 0;
  short events = 0;
  if (read_requested_ || (draining_ && !drain_input_done_)) events |= POLLIN;
  if (outbound_.HasFlushed()) events |= POLLOUT;
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
  if (IsConnecting()) {
    FinishConnect();
    return;
  }
  if ((revents & (POLLIN | POLLERR | POLLHUP)) != 0) ReadReady();
  if (IsOpen() && (revents & POLLOUT) != 0) DoWrite();
}

bool OioSocketChannel::BeginShutdownDrain() {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (!IsOpen() || !IsActive() || IsConnecting() ||
      outbound_.empty()) {
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
  CloseWithCause(err != 0 ? internal_transport::ErrnoStatus(err, "socket")
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
    CloseWithCause(internal_transport::ErrnoStatus(errno, "recv"));
    return;
  }
}

void OioSocketChannel::OnRegistered() {
  // An accepted channel is active from the start.
  if (IsActive()) pipeline().FireChannelActive();
}

void OioSocketChannel::BecomeActive() {
  pipeline().FireChannelActive();
  // Writes flushed while connecting go now.
  if (IsOpen() && outbound_.HasFlushed()) DoWrite();
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
    CloseWithCause(error);
    return;
  }
  // With AUTO_READ on the head asked for the next read (read_requested_) above.
  if (eof) CloseWithCause(absl::OkStatus());
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
        ch->outbound_.Add(std::move(*shared), std::move(promise));
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
  bool waiting = outbound_.HasFlushed();
  outbound_.AddFlush();
  if (!IsActive() || waiting) return;
  DoWrite();
}

void OioSocketChannel::DoWrite() {
  absl::Status written = outbound_.WriteTo(fd());
  if (!written.ok()) {
    CloseWithCause(written);
    return;
  }
  // A graceful shutdown's drain is done once every queued write was handed over.
  if (draining_ && IsOpen() && outbound_.empty()) CloseWithCause(absl::OkStatus());
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
        ch->CloseWithCause(absl::OkStatus());
        promise.TrySuccess();
      },
      &promise);
}

void OioSocketChannel::CloseWithCause(absl::Status cause) {
  if (!IsOpen()) return;
  std::shared_ptr<Channel> self = shared_from_this();
  AbortConnect(cause);
  read_requested_ = false;
  CloseCommon();
  // Writes still queued fail (a closed channel fires no writability change).
  outbound_.FailAll(cause.ok() ? ClosedError() : cause);
}

}  // namespace gyre
