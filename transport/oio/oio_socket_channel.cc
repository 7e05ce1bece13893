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
#include "gyre/transport/internal/abstract_byte_channel_impl.h"
#include "gyre/transport/internal/io_syscalls.h"
#include "gyre/transport/internal/socket_util.h"

namespace gyre {

template class AbstractByteChannel<AbstractOioChannel, OioSocketChannel>;

namespace {

constexpr size_t kReadChunk = 64 * 1024;

}  // namespace

OioSocketChannel::OioSocketChannel(Channel* parent, int fd)
    : AbstractByteChannel(parent, fd, "OioSocketChannel") {}

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
    DrainEvent((revents & (POLLOUT | POLLERR | POLLHUP)) != 0,
               (revents & POLLIN) != 0 && !drain_input_done_,
               (revents & (POLLERR | POLLHUP | POLLNVAL)) != 0);
    return;
  }
  if (IsConnecting()) {
    FinishConnect();
    return;
  }
  if ((revents & (POLLIN | POLLERR | POLLHUP)) != 0) ReadReady();
  if (IsOpen() && (revents & POLLOUT) != 0) DoWrite();
}

void OioSocketChannel::BeginReadOnLoop() {
  loop_affinity_.AssertOnLoop();  // called by AbstractByteChannel on the loop
  if (!IsActive() || draining_) return;
  // The next poll waits for bytes too.
  read_requested_ = true;
}

void OioSocketChannel::WatchInboundWhileDraining(bool on) {
  loop_affinity_.AssertOnLoop();  // called by AbstractByteChannel on the loop
  drain_input_done_ = !on;
}

void OioSocketChannel::ReadReady() {
  read_requested_ = false;
  if (read_buf_.empty()) read_buf_.resize(kReadChunk);
  const int max_reads = std::max(1, config().max_messages_per_read());
  bool eof = false;
  absl::Status error;
  for (int i = 0; i < max_reads && IsOpen(); ++i) {
    ssize_t n = internal_transport::Recv(fd(), read_buf_.data(), read_buf_.size(), 0);
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

}  // namespace gyre
