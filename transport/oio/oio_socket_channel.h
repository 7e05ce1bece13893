// OioSocketChannel: a TCP connection served by a thread of its own (a
// ThreadPerChannelEventLoop), with the same Channel / pipeline API as the nio one.
//
//   auto group = OioEventLoopGroup::Create();
//   std::shared_ptr<OioSocketChannel> ch = OioSocketChannel::Create();
//   ch->pipeline().AddLast("app", handler).IgnoreError();
//   (*group)->Register(ch);                               // then:
//   ch->Connect(*SocketAddress::Parse("127.0.0.1:8080")).AddListener(...);
//   ch->WriteAndFlush(std::string("hello"));              // from any thread
//
// The channel's thread blocks in poll(2) on the socket and the loop's eventfd: for
// bytes while reading, for room while writes are pending; a task from another thread
// (a write, a Close) wakes it at once. Reads, writes and connects never block the
// thread anywhere else, so Close, CONNECT_TIMEOUT and timers work while a read or a
// write is waiting.
//
// Reading: with AUTO_READ on (the default) the channel reads whenever bytes arrive;
// each read fires ChannelRead with a ByteBuf (the handler owns it), up to
// MAX_MESSAGES_PER_READ reads per wake-up, then ChannelReadComplete. With AUTO_READ
// off it reads only after Read().
//
// Writing: Write queues a ByteBuf (or a std::string, copied); Flush sends what was
// queued with sendmsg (an iovec per buffer), as far as the socket takes it; the rest
// goes when poll reports room. Each write's future succeeds once its bytes are handed
// to the kernel. IsWritable() follows the WRITE_BUFFER_HIGH/LOW_WATER_MARKs as in nio
// (both keep their queue in a ChannelOutboundBuffer).
//
// Connecting: the future fails with DeadlineExceeded after CONNECT_TIMEOUT (default
// 30 s), with Unavailable when refused or unreachable; the channel closes then.
//
// Closing (also on EOF or an I/O error): fires ChannelInactive and
// ChannelUnregistered, completes CloseFuture, fails queued writes with
// FailedPrecondition, and the channel's loop terminates.
//
// When its loop shuts down gracefully a connected channel with queued writes drains,
// as a NioSocketChannel does: the unflushed ones are flushed, no ChannelRead is
// delivered from then on (bytes the peer still sends are read and discarded, so the
// close is a FIN, not a reset), later writes are flushed at once, and the channel
// closes as usual once its outbound buffer is empty, so those writes succeed. An I/O
// error, a hang-up, Close or the loop's shutdown timeout ends the drain early (failing
// what is left). A channel with nothing queued, or still connecting, closes at once.
//
//   created -> registered -> connecting -> active -> closed (loop terminates)
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the channel's thread).
// Ownership: shared; the loop holds a reference while registered.
#ifndef GYRE_TRANSPORT_OIO_OIO_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_OIO_OIO_SOCKET_CHANNEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "gyre/channel/byte_buf.h"
#include "gyre/transport/abstract_byte_channel.h"
#include "gyre/transport/oio/abstract_oio_channel.h"

namespace gyre {

class OioSocketChannel;
extern template class AbstractByteChannel<AbstractOioChannel, OioSocketChannel>;

class OioSocketChannel final : public AbstractByteChannel<AbstractOioChannel, OioSocketChannel> {
 public:
  ~OioSocketChannel() override;

 private:
  friend class AbstractByteChannel<AbstractOioChannel, OioSocketChannel>;

  OioSocketChannel(Channel* parent, int fd);

  // OioIoHandler
  short PollEvents() const override;
  void OnPollEvent(short revents) override;
  // AbstractByteChannel's hooks.
  void BeginReadOnLoop();
  void UpdateWriteInterest(bool pending) {}  // PollEvents asks for room while pending
  void WatchInboundWhileDraining(bool on);

  void ReadReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  // Loop-confined (guarded by the channel's loop affinity).
  // While draining: the peer's FIN was read (nothing more to discard).
  bool drain_input_done_ ABSL_GUARDED_BY(loop_affinity_) = false;
  std::vector<char> read_buf_ ABSL_GUARDED_BY(loop_affinity_);
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_OIO_SOCKET_CHANNEL_H_
