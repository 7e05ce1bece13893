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
// off it reads only after Read().
//
// Writing: Write queues a ByteBuf (or a std::string, copied) and Flush sends what was
// queued, with writev, as far as the socket takes it; the rest goes when the socket is
// writable again. Each write's future succeeds once all its bytes are handed to the
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
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/scheduled_future.h"
#include "gyre/transport/nio/abstract_nio_channel.h"

namespace gyre {

class NioSocketChannel final : public AbstractNioChannel {
 public:
  // An unconnected channel (its socket is made on connect or bind).
  static std::shared_ptr<NioSocketChannel> Create();
  // A channel over the connected socket `fd` (which it owns), accepted by `parent`.
  static std::shared_ptr<NioSocketChannel> CreateAccepted(Channel* parent, int fd);
  ~NioSocketChannel() override;

  bool IsWritable() const override {
    // Relaxed: a hint for producers; the loop is the only writer.
    return writable_.load(std::memory_order_relaxed);
  }
  // Bytes written and not yet handed to the kernel (loop-maintained; relaxed snapshot).
  int64_t PendingOutboundBytes() const { return pending_bytes_.load(std::memory_order_relaxed); }

  Unsafe& unsafe() override { return unsafe_; }

 private:
  class NioUnsafe final : public Unsafe {
   public:
    explicit NioUnsafe(NioSocketChannel* ch) : ch_(ch) {}
    void Register(EventLoop* loop, ChannelPromise promise) override {
      ch_->DoRegister(loop, std::move(promise));
    }
    void Bind(const SocketAddress& local, ChannelPromise promise) override;
    void Connect(const SocketAddress& remote, const SocketAddress& local,
                 ChannelPromise promise) override;
    void Disconnect(ChannelPromise promise) override { Close(std::move(promise)); }
    void Close(ChannelPromise promise) override;
    void Deregister(ChannelPromise promise) override { ch_->DoDeregister(std::move(promise)); }
    void BeginRead() override;
    void Write(Message msg, ChannelPromise promise) override;
    void Flush() override;

   private:
    NioSocketChannel* const ch_;
  };

  struct Pending {
    ByteBuf buf;
    ChannelPromise promise;
  };

  NioSocketChannel(Channel* parent, int fd);

  void OnIoEvent(uint32_t events) override;
  void OnRegistered() override;
  absl::Status EnsureSocket(int family);
  void FinishConnect();
  void FailConnect(absl::Status cause);
  void ReadReady();
  void WriteReady();
  void DoWrite();
  void DoClose(absl::Status cause);
  void AddPending(int64_t delta);
  void SetWritable(bool writable);
  void BecomeActive();

  NioUnsafe unsafe_{this};
  // Relaxed: see IsWritable() / PendingOutboundBytes().
  std::atomic<bool> writable_{true};
  std::atomic<int64_t> pending_bytes_{0};

  // Loop-confined.
  std::deque<Pending> unflushed_;
  std::deque<Pending> flushed_;
  std::optional<ChannelPromise> connect_promise_;
  std::optional<ScheduledFuture<void>> connect_timeout_;
  bool read_requested_ = false;
  bool in_write_ = false;
  std::vector<char> read_buf_;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_SOCKET_CHANNEL_H_
