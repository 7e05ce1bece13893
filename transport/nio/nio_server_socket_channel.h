// NioServerSocketChannel: a listening TCP socket on a NioEventLoop that accepts
// connections and hands each to a loop of a child group.
//
//   NioServerSocketChannel::ChildSetup setup;
//   setup.group = workers.get();
//   setup.initializer = [](NioSocketChannel& child) {
//     child.pipeline().AddLast("echo", std::make_shared<EchoHandler>()).IgnoreError();
//   };
//   auto server = NioServerSocketChannel::Create(std::move(setup));
//   bosses->Register(server);
//   server->Bind(SocketAddress::Loopback(0)).Await();
//   uint16_t port = server->local_address().port();
//
// Bind sets SO_REUSEADDR (unless the config says otherwise) and listens with
// SO_BACKLOG (default 128). While AUTO_READ is on it accepts up to
// kMaxAcceptsPerWakeup connections per readiness. For each, in order: a
// NioSocketChannel is made, the child options are applied, the initializer runs (on
// the server's loop, before registration; a throwing initializer closes the child),
// and the child is registered with `group->Next()`; it fires ChannelRegistered and
// ChannelActive there. When the process or system is out of fds (EMFILE/ENFILE) it
// stops accepting for kAcceptBackoff, without spinning, fires ExceptionCaught with
// ResourceExhausted on the server's pipeline, and then resumes.
// The bind future fails with the errno status (EADDRINUSE: FailedPrecondition, as
// absl::ErrnoToStatusCode maps it). Closing the
// server does not close accepted children.
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the loop).
// Ownership: shared; the loop holds a reference while registered. The child group is
// not owned and must outlive the server.
#ifndef GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "gyre/channel/channel_option.h"
#include "gyre/transport/nio/abstract_nio_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"

namespace gyre {

class NioServerSocketChannel final : public AbstractNioChannel {
 public:
  static constexpr int kMaxAcceptsPerWakeup = 64;
  static constexpr int kDefaultBacklog = 128;
  static constexpr absl::Duration kAcceptBackoff = absl::Milliseconds(100);

  // What happens to accepted connections.
  struct ChildSetup {
    // Where children are registered (not owned). Null: the server's own loop.
    EventLoopGroup* group = nullptr;
    // Runs once per child on the server's loop, before the child is registered.
    std::function<void(NioSocketChannel&)> initializer;
    // Applied to each child's config before the initializer runs.
    std::vector<ChannelOptionSetting> options;
    // True: set up nothing here; deliver each accepted child, unregistered, as a
    // ChannelRead of std::shared_ptr<Channel> through the server's pipeline (what
    // ServerBootstrap's acceptor handles). The fields above are ignored then.
    bool deliver_to_pipeline = false;
  };

  static std::shared_ptr<NioServerSocketChannel> Create(ChildSetup setup);
  // A server channel that delivers accepted children through its pipeline (for
  // ServerBootstrap::Channel<NioServerSocketChannel>()).
  static std::shared_ptr<NioServerSocketChannel> Create();
  ~NioServerSocketChannel() override;

  Unsafe& unsafe() override { return unsafe_; }

  // Connections accepted so far, and EMFILE/ENFILE back-offs (relaxed statistics).
  int64_t AcceptedCount() const { return accepted_.load(std::memory_order_relaxed); }
  int64_t AcceptBackoffs() const { return backoffs_.load(std::memory_order_relaxed); }

 private:
  class ServerUnsafe final : public Unsafe {
   public:
    explicit ServerUnsafe(NioServerSocketChannel* ch) : ch_(ch) {}
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
    NioServerSocketChannel* const ch_;
  };

  explicit NioServerSocketChannel(ChildSetup setup);
  void OnIoEvent(uint32_t events) override;
  void AcceptReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void InitChild(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  void BackOff() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);

  ServerUnsafe unsafe_{this};
  ChildSetup setup_;
  // Relaxed: statistics.
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> backoffs_{0};
  // Loop-confined.
  bool read_requested_ ABSL_GUARDED_BY(loop_affinity_) = false;
  bool backing_off_ ABSL_GUARDED_BY(loop_affinity_) = false;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_
