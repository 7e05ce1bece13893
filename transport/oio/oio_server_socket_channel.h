// OioServerSocketChannel: a listening TCP socket served by a thread of its own, that
// accepts connections and gives each accepted OioSocketChannel a thread of its own
// (a ThreadPerChannelEventLoop of the child group).
//
//   auto bosses = OioEventLoopGroup::Create();
//   auto workers = OioEventLoopGroup::Create(/*max_channels=*/1000);
//   ServerBootstrap server;
//   server.Group(bosses->get(), workers->get())
//       .Channel<OioServerSocketChannel>()
//       .ChildHandler(handler);
//   auto listening = server.Bind(SocketAddress::Loopback(0)).Sync();
//
// The accept loop: the server's thread blocks in poll(2) on the listening socket and
// its loop's eventfd (no timeout unless a timer is due), then accepts what is
// pending (up to kMaxAcceptsPerWakeup per wake-up; the socket is non-blocking, so an
// accept never blocks the thread, also when a connection vanished after poll
// reported it). Closing the server from any thread queues the close on its loop,
// whose eventfd write ends the poll at once: the accept loop never spins and never
// waits out a timeout.
//
// Each accepted child is delivered through the server's pipeline as a ChannelRead of
// std::shared_ptr<Channel> (ServerBootstrap's acceptor applies the child options,
// adds the child handler and registers it with the child group), or set up and
// registered here with a ChildSetup. A registration refused by a capped child group
// (ResourceExhausted) closes that child and is logged; the server goes on accepting.
// Out of fds (EMFILE/ENFILE): stops accepting for kAcceptBackoff, without spinning,
// fires ExceptionCaught with ResourceExhausted, then resumes. Bind sets SO_REUSEADDR
// (unless the config says otherwise) and listens with SO_BACKLOG (default 128); its
// future fails with the errno status (EADDRINUSE: FailedPrecondition). Closing the
// server does not close accepted children.
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the server's thread).
// Ownership: shared; its loop holds a reference while registered. The child group
// is not owned and must outlive the server.
#ifndef GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "gyre/channel/channel_option.h"
#include "gyre/transport/oio/abstract_oio_channel.h"
#include "gyre/transport/oio/oio_socket_channel.h"

namespace gyre {

class OioServerSocketChannel final : public AbstractOioChannel {
 public:
  static constexpr int kMaxAcceptsPerWakeup = 64;
  static constexpr int kDefaultBacklog = 128;
  static constexpr absl::Duration kAcceptBackoff = absl::Milliseconds(100);

  // What happens to accepted connections (as NioServerSocketChannel::ChildSetup).
  struct ChildSetup {
    // Where children are registered (not owned; required unless deliver_to_pipeline).
    EventLoopGroup* group = nullptr;
    // Runs once per child on the server's thread, before the child is registered.
    std::function<void(OioSocketChannel&)> initializer;
    // Applied to each child's config before the initializer runs.
    std::vector<ChannelOptionSetting> options;
    // True: deliver each accepted child, unregistered, as a ChannelRead of
    // std::shared_ptr<Channel> through the server's pipeline (what ServerBootstrap's
    // acceptor handles). The fields above are ignored then.
    bool deliver_to_pipeline = false;
  };

  static std::shared_ptr<OioServerSocketChannel> Create(ChildSetup setup);
  // A server channel that delivers accepted children through its pipeline (for
  // ServerBootstrap::Channel<OioServerSocketChannel>()).
  static std::shared_ptr<OioServerSocketChannel> Create();
  ~OioServerSocketChannel() override;

  Unsafe& unsafe() override { return unsafe_; }

  // Connections accepted so far, and EMFILE/ENFILE back-offs (relaxed statistics).
  int64_t AcceptedCount() const { return accepted_.load(std::memory_order_relaxed); }
  int64_t AcceptBackoffs() const { return backoffs_.load(std::memory_order_relaxed); }

 private:
  class ServerUnsafe final : public Unsafe {
   public:
    explicit ServerUnsafe(OioServerSocketChannel* ch) : ch_(ch) {}
    void Register(EventLoop* loop, ChannelPromise promise) override {
      ch_->DoRegister(loop, std::move(promise));
    }
    void Bind(const SocketAddress& local, ChannelPromise promise) override;
    void Connect(const SocketAddress&, const SocketAddress&, ChannelPromise promise) override {
      promise.TryFailure(absl::UnimplementedError("a server channel does not connect"));
    }
    void Disconnect(ChannelPromise promise) override { Close(std::move(promise)); }
    void Close(ChannelPromise promise) override;
    void Deregister(ChannelPromise promise) override { ch_->DoDeregister(std::move(promise)); }
    void BeginRead() override;
    void Write(Message, ChannelPromise promise) override {
      promise.TryFailure(absl::UnimplementedError("a server channel does not write"));
    }
    void Flush() override {}

   private:
    OioServerSocketChannel* const ch_;
  };

  explicit OioServerSocketChannel(ChildSetup setup);

  // OioIoHandler
  short PollEvents() const override;
  void OnPollEvent(short revents) override;

  void AcceptReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void InitChild(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void BackOff() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  ServerUnsafe unsafe_{this};
  ChildSetup setup_;
  // Relaxed: statistics.
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> backoffs_{0};
  // Loop-confined (guarded by the channel's loop affinity).
  bool read_requested_ ABSL_GUARDED_BY(loop_affinity_) = false;
  bool backing_off_ ABSL_GUARDED_BY(loop_affinity_) = false;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_
