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
#include "gyre/transport/internal/abstract_byte_channel_impl.h"
#include "gyre/transport/internal/io_syscalls.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

template class AbstractByteChannel<AbstractNioChannel, NioSocketChannel>;

namespace {

constexpr uint32_t kReadInterest = EPOLLIN | EPOLLRDHUP;

}  // namespace

NioSocketChannel::NioSocketChannel(Channel* parent, int fd)
    : AbstractByteChannel(parent, fd, "NioSocketChannel") {}

NioSocketChannel::~NioSocketChannel() = default;

void NioSocketChannel::WaitForConnect() { AddInterest(EPOLLOUT); }

void NioSocketChannel::ConnectDone() {
  // EPOLLOUT stays only for writes flushed while connecting.
  if (!outbound_.HasFlushed()) RemoveInterest(EPOLLOUT);
}

void NioSocketChannel::OnIoEvent(uint32_t events) {
  loop_affinity_.AssertOnLoop();  // called by the loop
  // No reference taken here: a channel deregistered by its handlers stays alive in the
  // loop until the end of the batch (NioEventLoop::ProcessReady releases it there).
  if (!IsOpen()) return;
  if (draining_) {
    DrainEvent((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0,
               (events & (EPOLLIN | EPOLLRDHUP)) != 0 && (interest() & EPOLLIN) != 0,
               (events & (EPOLLERR | EPOLLHUP)) != 0);
    return;
  }
  if (IsConnecting()) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) FinishConnect();
    return;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP)) != 0) {
    if ((interest() & EPOLLIN) != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) ReadReady();
  }
  if (IsOpen() && (events & EPOLLOUT) != 0) DoWrite();
}

void NioSocketChannel::BeginReadOnLoop() {
  loop_affinity_.AssertOnLoop();  // called by AbstractByteChannel on the loop
  if (!IsActive() || input_shutdown_.load(std::memory_order_relaxed) || draining_) return;
  read_requested_ = true;
  AddInterest(kReadInterest);
}

void NioSocketChannel::UpdateWriteInterest(bool pending) {
  loop_affinity_.AssertOnLoop();  // called by AbstractByteChannel on the loop
  if (pending) {
    AddInterest(EPOLLOUT);
  } else {
    RemoveInterest(EPOLLOUT);
  }
}

void NioSocketChannel::WatchInboundWhileDraining(bool on) {
  loop_affinity_.AssertOnLoop();  // called by AbstractByteChannel on the loop
  if (!on) {
    RemoveInterest(kReadInterest);
  } else if (!input_shutdown_.load(std::memory_order_relaxed)) {
    AddInterest(kReadInterest);
  }
}

void NioSocketChannel::ReadReady() {
  read_requested_ = false;
  if (input_shutdown_.load(std::memory_order_relaxed)) {
    // Only an error or a hang-up gets here once the input is shut down.
    char probe;
    ssize_t n = internal_transport::Recv(fd(), &probe, 1, MSG_PEEK);
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
      n = internal_transport::Recv(fd(), room.data(), want, 0);
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
    promise.TryFailure(internal_transport::ClosedError());
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
  outbound_.FailAll(internal_transport::OutputShutdownError());
  promise.TrySuccess();
  if (!IsOpen()) return;
  pipeline().FireUserEventTriggered(Message(ChannelOutputShutdownEvent{}));
  if (IsOpen() && (draining_ || input_shutdown_.load(std::memory_order_relaxed))) {
    CloseWithCause(absl::OkStatus());
  }
}

}  // namespace gyre
