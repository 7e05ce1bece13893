// NioSocketChannel: a non-blocking TCP connection on a NioEventLoop.
//
//   std::shared_ptr<NioSocketChannel> ch = NioSocketChannel::Create();
//   ch->pipeline().AddLast("app", handler).IgnoreError();
//   group->Register(ch);                                  // then:
//   ch->Connect(*SocketAddress::Parse("127.0.0.1:8080")).AddListener(...);
//   ch->WriteAndFlush(std::move(byte_buf));               // a ByteBuf (or std::string)
//
// Reading: with AUTO_READ on (the default) the channel reads whenever bytes arrive; each
// read fires ChannelRead with a ByteBuf (the handler owns it), up to
// MAX_MESSAGES_PER_READ reads per readiness, then ChannelReadComplete. With AUTO_READ
// off it reads only after Read(). Reads go straight into buffers from the pooled
// allocator, sized by an AdaptiveRecvByteBufAllocator (64 B .. 64 KiB, 2 KiB at first).
//
// Half-close: when the peer shuts down its output (FIN: EPOLLRDHUP / a read of 0) the
// channel closes, unless ALLOW_HALF_CLOSURE is on: then it stops reading, fires
// ChannelInputShutdownEvent (gyre/channel/channel_events.h) and stays open for writing.
// ShutdownOutput() sends a FIN: queued writes fail with FailedPrecondition, so do later
// ones, and ChannelOutputShutdownEvent fires. Once both directions are shut down (after
// the second event) the channel closes.
//
// Writing: Write queues a ByteBuf (or a std::string, copied) and Flush sends what was
// queued, with sendmsg (an iovec per buffer), as far as the socket takes it; the rest
// goes when the socket is writable again. Each write's future succeeds once all its bytes are handed to the
// kernel. IsWritable() turns false when the queued bytes exceed
// WRITE_BUFFER_HIGH_WATER_MARK and true again below WRITE_BUFFER_LOW_WATER_MARK; each
// change fires ChannelWritabilityChanged.
//
// Connecting: the future fails with DeadlineExceeded after CONNECT_TIMEOUT (default
// 30 s), with Unavailable when refused or unreachable, and the channel closes then.
//
// Closing (also on EOF or an I/O error): fires ChannelInactive and
// ChannelUnregistered, completes CloseFuture, and fails every queued write with
// FailedPrecondition.
//
// When its loop shuts down gracefully a connected channel with queued writes drains:
// the unflushed ones are flushed, reading stops (no ChannelRead is delivered from
// then on: bytes the peer still sends are read and discarded, so the close is a FIN,
// not a reset that would drop the tail of the writes still in the kernel), later
// writes are flushed at once, and the channel closes as usual (ChannelInactive,
// ChannelUnregistered) as soon as its outbound buffer is empty, so those writes
// succeed. An I/O error, a hang-up, ShutdownOutput or Close ends the
// drain early (failing what is left), and so does the loop's shutdown timeout. A
// channel with nothing queued, or still connecting, closes at once.
//
//   created -> registered -> connecting -> active -> closed (inactive, unregistered)
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the loop).
// Ownership: shared; the loop holds a reference while registered.
#ifndef GYRE_TRANSPORT_NIO_NIO_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_NIO_NIO_SOCKET_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "gyre/channel/adaptive_recv_byte_buf_allocator.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/transport/abstract_byte_channel.h"
#include "gyre/transport/nio/abstract_nio_channel.h"

namespace gyre {

class NioSocketChannel;
extern template class AbstractByteChannel<AbstractNioChannel, NioSocketChannel>;

class NioSocketChannel final : public AbstractByteChannel<AbstractNioChannel, NioSocketChannel> {
 public:
  ~NioSocketChannel() override;

  // Shuts down the output (a TCP FIN to the peer); see the header comment. Fails with
  // FailedPrecondition when the channel is closed or not connected. Any thread.
  ChannelFuture ShutdownOutput();
  // Whether the peer's FIN was seen (with ALLOW_HALF_CLOSURE) / ShutdownOutput took
  // effect. Relaxed snapshots of loop-maintained state.
  bool IsInputShutdown() const { return input_shutdown_.load(std::memory_order_relaxed); }
  bool IsOutputShutdown() const { return output_shutdown_.load(std::memory_order_relaxed); }

 private:
  friend class AbstractByteChannel<AbstractNioChannel, NioSocketChannel>;

  NioSocketChannel(Channel* parent, int fd);

  // NioIoHandler
  void OnIoEvent(uint32_t events) override;
  // AbstractSocketChannel
  void WaitForConnect() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void ConnectDone() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  // AbstractByteChannel's hooks.
  void BeginReadOnLoop();
  void UpdateWriteInterest(bool pending);
  void WatchInboundWhileDraining(bool on);

  void ReadReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void DoShutdownOutput(ChannelPromise promise) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void InputShutdown() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  std::atomic<bool> input_shutdown_{false};
  AdaptiveRecvByteBufAllocator::Handle recv_handle_ ABSL_GUARDED_BY(loop_affinity_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_SOCKET_CHANNEL_H_
