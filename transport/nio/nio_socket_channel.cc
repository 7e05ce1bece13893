#include "gyre/transport/nio/nio_socket_channel.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "gyre/channel/channel_events.h"
#include "gyre/concurrent/internal/log.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {
namespace {

constexpr uint32_t kReadInterest = EPOLLIN | EPOLLRDHUP;
// recv calls per readiness that drop a draining channel's inbound bytes.
constexpr int kDiscardReadsPerEvent = 16;

absl::Status ClosedError() { return absl::FailedPreconditionError("channel is closed"); }
absl::Status OutputShutdownError() {
  return absl::FailedPreconditionError("channel output is shut down");
}

}  // namespace

std::shared_ptr<NioSocketChannel> NioSocketChannel::Create() {
  return std::shared_ptr<NioSocketChannel>(new NioSocketChannel(nullptr, -1));
}

std::shared_ptr<NioSocketChannel> NioSocketChannel::CreateAccepted(Channel* parent, int fd) {
  std::shared_ptr<NioSocketChannel> ch(new NioSocketChannel(parent, fd));
  ch->loop_affinity_.AssertOnLoop();  // not registered yet: this thread has it
  ch->MarkConnected();
  return ch;
}

NioSocketChannel::NioSocketChannel(Channel* parent, int fd) : AbstractNioChannel(parent, fd) {}

NioSocketChannel::~NioSocketChannel() = default;

void NioSocketChannel::OnRegistered() {
  // An accepted channel is active from the start.
  if (IsActive()) pipeline().FireChannelActive();
}

void NioSocketChannel::WaitForConnect() { AddInterest(EPOLLOUT); }

void NioSocketChannel::ConnectDone() {
  // EPOLLOUT stays only for writes flushed while connecting.
  if (!outbound_.HasFlushed()) RemoveInterest(EPOLLOUT);
}

void NioSocketChannel::BecomeActive() {
  pipeline().FireChannelActive();
  // Writes flushed while connecting go now.
  if (IsOpen() && outbound_.HasFlushed()) DoWrite();
}

void NioSocketChannel::OnIoEvent(uint32_t events) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  std::shared_ptr<Channel> self = shared_from_this();  // alive through the handlers
  if (!IsOpen()) return;
  if (draining_) {
    DrainEvent(events);
    return;
  }
  if (IsConnecting()) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) FinishConnect();
    return;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) != 0) {
    if ((interest() & EPOLLIN) != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) ReadReady();
  }
  if (IsOpen() && (events & EPOLLOUT) != 0) WriteReady();
}

bool NioSocketChannel::BeginShutdownDrain() {
  loop_affinity_.AssertOnLoop();  // called by the loop
  if (!IsOpen()) return false;
  if (draining_) return true;
  if (!IsActive() || IsConnecting() ||
      output_shutdown_.load(std::memory_order_relaxed) ||
      outbound_.empty()) {
    CloseWithCause(absl::OkStatus());
    return false;
  }
  draining_ = true;
  // No new inbound messages while draining; inbound bytes are read and discarded (see
  // DrainEvent), so none are left unread when the channel closes.
  read_requested_ = false;
  if (!input_shutdown_.load(std::memory_order_relaxed)) AddInterest(kReadInterest);
  // Flushes the unflushed writes; DoWrite closes the channel if it empties the buffer.
  FlushOnLoop();
  return IsOpen();
}

void NioSocketChannel::DrainEvent(uint32_t events) {
  // Writable, or an error or hang-up: a send reports the socket's error (and closes).
  if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) WriteReady();
  if (IsOpen() && (events & (EPOLLIN | EPOLLRDHUP)) != 0 && (interest() & EPOLLIN) != 0) {
    DiscardInbound();
  }
  if (!IsOpen() || (events & (EPOLLERR | EPOLLHUP)) == 0) return;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  CloseWithCause(err != 0 ? internal_transport::ErrnoStatus(err, "socket")
                   : absl::UnavailableError("connection hung up while draining writes"));
}

void NioSocketChannel::DiscardInbound() {
  // Closing a socket with unread inbound bytes sends a reset, and the kernel then drops
  // what it still holds of the drained writes: so read (bounded per event; the
  // interest is level-triggered) and drop what the peer sends, delivering nothing.
  char scratch[16 * 1024];
  for (int i = 0; i < kDiscardReadsPerEvent; ++i) {
    ssize_t n = ::recv(fd(), scratch, sizeof(scratch), 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0) {
      RemoveInterest(kReadInterest);  // the peer's FIN: it sends nothing more
      return;
    }
    CloseWithCause(internal_transport::ErrnoStatus(errno, "recv"));
    return;
  }
}

void NioSocketChannel::NioUnsafe::BeginRead() {
  NioSocketChannel* ch = ch_;
  // On the loop (auto-read re-arming after every read): inline, no task.
  if (ch->OnLoopOrUnregistered()) {
    ch->loop_affinity_.AssertOnLoop();
    ch->BeginReadOnLoop();
    return;
  }
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        ch->BeginReadOnLoop();
      },
      nullptr);
}

void NioSocketChannel::BeginReadOnLoop() {
  if (!IsActive() || input_shutdown_.load(std::memory_order_relaxed) || draining_) return;
  read_requested_ = true;
  AddInterest(kReadInterest);
}

void NioSocketChannel::ReadReady() {
  read_requested_ = false;
  if (input_shutdown_.load(std::memory_order_relaxed)) {
    // Only an error or a hang-up gets here once the input is shut down.
    char probe;
    ssize_t n = ::recv(fd(), &probe, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    CloseWithCause(n < 0 ? internal_transport::ErrnoStatus(errno, "recv") : absl::OkStatus());
    return;
  }
  recv_handle_.Reset(config().max_messages_per_read());
  bool eof = false;
  absl::Status error;
  do {
    const size_t attempt = recv_handle_.Guess();
    absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->Buffer(attempt);
    if (!buf.ok()) {
      error = buf.status();
      break;
    }
    absl::Span<uint8_t> room = buf->WritableSpan();
    const size_t want = std::min(room.size(), attempt);
    ssize_t n;
    do {
      n = ::recv(fd(), room.data(), want, 0);
    } while (n < 0 && errno == EINTR);
    recv_handle_.LastBytesRead(n, want);
    if (n > 0) {
      (void)buf->SetWriterIndex(buf->writer_index() + static_cast<size_t>(n));
      pipeline().FireChannelRead(Message(*std::move(buf)));
      continue;
    }
    if (n == 0) {
      eof = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error = internal_transport::ErrnoStatus(errno, "recv");
    }
    break;
  } while (recv_handle_.ContinueReading() && IsOpen());
  recv_handle_.ReadComplete();
  if (!IsOpen()) return;
  pipeline().FireChannelReadComplete();
  if (!error.ok()) {
    if (!IsOpen()) return;
    pipeline().FireExceptionCaught(error);
    CloseWithCause(error);
    return;
  }
  if (eof) {
    if (IsOpen()) InputShutdown();
    return;
  }
  // The head asks for the next read (Read() sets read_requested_) when AUTO_READ is on.
  if (!read_requested_ && IsOpen()) RemoveInterest(kReadInterest);
}

void NioSocketChannel::InputShutdown() {
  if (!config().allow_half_closure()) {
    CloseWithCause(absl::OkStatus());
    return;
  }
  // Relaxed: see IsInputShutdown().
  input_shutdown_.store(true, std::memory_order_relaxed);
  read_requested_ = false;
  RemoveInterest(kReadInterest);
  pipeline().FireUserEventTriggered(Message(ChannelInputShutdownEvent{}));
  if (IsOpen() && output_shutdown_.load(std::memory_order_relaxed)) CloseWithCause(absl::OkStatus());
}

ChannelFuture NioSocketChannel::ShutdownOutput() {
  ChannelPromise promise = NewPromise();
  std::shared_ptr<Channel> self = shared_from_this();
  RunOnLoop(
      [this, self, promise]() mutable {
        loop_affinity_.AssertOnLoop();
        DoShutdownOutput(std::move(promise));
      },
      &promise);
  return promise;
}

void NioSocketChannel::DoShutdownOutput(ChannelPromise promise) {
  if (!IsOpen()) {
    promise.TryFailure(ClosedError());
    return;
  }
  if (output_shutdown_.load(std::memory_order_relaxed)) {
    promise.TrySuccess();
    return;
  }
  if (!IsActive()) {
    promise.TryFailure(absl::FailedPreconditionError("shutdownOutput: channel is not connected"));
    return;
  }
  if (::shutdown(fd(), SHUT_WR) != 0) {
    promise.TryFailure(internal_transport::ErrnoStatus(errno, "shutdown(SHUT_WR)"));
    return;
  }
  // Relaxed: see IsOutputShutdown().
  output_shutdown_.store(true, std::memory_order_relaxed);
  RemoveInterest(EPOLLOUT);
  outbound_.FailAll(OutputShutdownError());
  promise.TrySuccess();
  if (!IsOpen()) return;
  pipeline().FireUserEventTriggered(Message(ChannelOutputShutdownEvent{}));
  if (IsOpen() && (draining_ || input_shutdown_.load(std::memory_order_relaxed))) {
    CloseWithCause(absl::OkStatus());
  }
}

void NioSocketChannel::NioUnsafe::Write(Message msg, ChannelPromise promise) {
  NioSocketChannel* ch = ch_;
  // On the loop (the common case: a handler writing): no task, no allocation.
  if (ch->OnLoopOrUnregistered()) {
    ch->loop_affinity_.AssertOnLoop();
    ch->WriteOnLoop(std::move(msg), std::move(promise));
    return;
  }
  auto shared = std::make_shared<Message>(std::move(msg));
  ch->RunOnLoop(
      [ch, shared, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        ch->WriteOnLoop(std::move(*shared), std::move(promise));
      },
      &promise);
}

void NioSocketChannel::WriteOnLoop(Message msg, ChannelPromise promise) {
  if (!IsOpen()) {
    promise.TryFailure(ClosedError());
    return;
  }
  if (output_shutdown_.load(std::memory_order_relaxed)) {
    promise.TryFailure(OutputShutdownError());
    return;
  }
  outbound_.Add(std::move(msg), std::move(promise));
  // Draining: nothing may be left unflushed when the buffer empties.
  if (draining_) FlushOnLoop();
}

void NioSocketChannel::NioUnsafe::Flush() {
  NioSocketChannel* ch = ch_;
  if (ch->OnLoopOrUnregistered()) {
    ch->loop_affinity_.AssertOnLoop();
    ch->FlushOnLoop();
    return;
  }
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self] {
        ch->loop_affinity_.AssertOnLoop();
        ch->FlushOnLoop();
      },
      nullptr);
}

void NioSocketChannel::FlushOnLoop() {
  if (!IsOpen()) return;
  outbound_.AddFlush();
  // Not yet connected, or waiting for EPOLLOUT: the data goes when writable.
  if (!IsActive() || (interest() & EPOLLOUT) != 0) return;
  DoWrite();
}

void NioSocketChannel::WriteReady() { DoWrite(); }

void NioSocketChannel::DoWrite() {
  absl::Status written = outbound_.WriteTo(fd());
  if (!written.ok()) {
    CloseWithCause(written);
    return;
  }
  if (!IsOpen()) return;
  if (!outbound_.HasFlushed()) {
    RemoveInterest(EPOLLOUT);
    // A graceful shutdown's drain is done once every queued write was handed over.
    if (draining_ && outbound_.empty()) CloseWithCause(absl::OkStatus());
  } else {
    AddInterest(EPOLLOUT);
  }
}

void NioSocketChannel::NioUnsafe::Close(ChannelPromise promise) {
  NioSocketChannel* ch = ch_;
  std::shared_ptr<Channel> self = ch->shared_from_this();
  ch->RunOnLoop(
      [ch, self, promise]() mutable {
        ch->loop_affinity_.AssertOnLoop();
        ch->CloseWithCause(absl::OkStatus());
        promise.TrySuccess();
      },
      &promise);
}

void NioSocketChannel::CloseWithCause(absl::Status cause) {
  if (!IsOpen()) return;
  std::shared_ptr<Channel> self = shared_from_this();
  AbortConnect(cause);
  CloseCommon();
  // Writes still queued fail (a closed channel fires no writability change).
  outbound_.FailAll(cause.ok() ? ClosedError() : cause);
}

}  // namespace gyre
