// AbstractServerSocketChannel<Base, Child, Derived>: what the transports' listening
// channels share: creation, bind and listen, the accept loop, the back-off when out of
// fds, and what happens to each accepted connection. `Base` is the transport's channel
// base (AbstractNioChannel, AbstractOioChannel), `Child` its socket channel (with a
// `static std::shared_ptr<Child> CreateAccepted(Channel* parent, int fd)`), `Derived`
// the final server channel class (constructible from a ChildSetup by this template,
// which it befriends).
//
// The transport tells when the socket may have connections (AcceptEvent) and makes its
// loop watch the socket while AcceptWanted() (UpdateAcceptInterest). Reading is asked
// for as on any channel (Read(), AUTO_READ); each readiness accepts up to
// kMaxAcceptsPerWakeup connections, then fires ChannelReadComplete. Each accepted child
// is delivered through the pipeline as a ChannelRead of std::shared_ptr<Channel>
// (ServerBootstrap's acceptor), or set up and registered here with a ChildSetup: the
// child options are applied, the initializer runs (on the server's loop, before
// registration; a throwing initializer closes the child), and the child is registered
// with `group->Next()`; a refused registration closes the child and is logged.
// Out of fds (EMFILE/ENFILE/ENOBUFS/ENOMEM): accepting stops for kAcceptBackoff,
// without spinning, ExceptionCaught fires with ResourceExhausted, then it resumes.
// Bind sets SO_REUSEADDR (unless the config says otherwise) and listens with
// SO_BACKLOG (default kDefaultBacklog); its future fails with the errno status
// (EADDRINUSE: FailedPrecondition). Closing the server does not close its children.
//
// The definitions are in transport/internal/abstract_server_socket_channel_impl.h;
// each transport instantiates the template once, in its own .cc.
//
// Thread safety: thread-safe (operations hop to the loop); the accept state is
// loop-confined.
// Ownership: shared; the loop holds a reference while registered. The child group is
// not owned and must outlive the server.
#ifndef GYRE_TRANSPORT_ABSTRACT_SERVER_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_ABSTRACT_SERVER_SOCKET_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_option.h"
#include "gyre/channel/event_loop.h"

namespace gyre {

template <typename Base, typename Child, typename Derived>
class AbstractServerSocketChannel : public Base {
 public:
  static constexpr int kMaxAcceptsPerWakeup = 64;
  static constexpr int kDefaultBacklog = 128;
  static constexpr absl::Duration kAcceptBackoff = absl::Milliseconds(100);

  // What happens to accepted connections.
  struct ChildSetup {
    // Where children are registered (not owned). Null: the transport's default (the
    // server's own loop for nio; oio has none and closes the child).
    EventLoopGroup* group = nullptr;
    // Runs once per child on the server's loop, before the child is registered.
    std::function<void(Child&)> initializer;
    // Applied to each child's config before the initializer runs.
    std::vector<ChannelOptionSetting> options;
    // True: set up nothing here; deliver each accepted child, unregistered, as a
    // ChannelRead of std::shared_ptr<Channel> through the server's pipeline (what
    // ServerBootstrap's acceptor handles). The fields above are ignored then.
    bool deliver_to_pipeline = false;
  };

  // A server channel whose accepted connections go as `setup` says.
  static std::shared_ptr<Derived> Create(ChildSetup setup) {
    return std::shared_ptr<Derived>(new Derived(std::move(setup)));
  }
  // A server channel that delivers accepted children through its pipeline (for
  // ServerBootstrap::Channel<...>()).
  static std::shared_ptr<Derived> Create() {
    ChildSetup setup;
    setup.deliver_to_pipeline = true;
    return Create(std::move(setup));
  }

  Channel::Unsafe& unsafe() override { return unsafe_; }

  // Connections accepted so far, and out-of-fds back-offs (relaxed statistics).
  int64_t AcceptedCount() const { return accepted_.load(std::memory_order_relaxed); }
  int64_t AcceptBackoffs() const { return backoffs_.load(std::memory_order_relaxed); }

 protected:
  explicit AbstractServerSocketChannel(ChildSetup setup)
      : Base(nullptr, -1), setup_(std::move(setup)) {}

  // Whether the loop should watch the socket for connections: a read was asked for
  // and no back-off runs.
  bool AcceptWanted() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_) {
    return read_requested_ && !backing_off_;
  }
  // The socket reported readiness (or an error): accepts what is pending.
  void AcceptEvent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  // --- What a transport supplies. ---

  // AcceptWanted() may have changed: make the loop watch the socket (or not).
  virtual void UpdateAcceptInterest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_) = 0;
  // Where children are registered when ChildSetup::group is null; null: nowhere (the
  // child is closed, with a warning).
  virtual EventLoopGroup* DefaultChildGroup() = 0;

 private:
  // Registration, close and deregistration as any socket channel; its own bind and
  // read (accept); no connect or write.
  class ServerUnsafe final : public Base::SocketUnsafe {
   public:
    explicit ServerUnsafe(AbstractServerSocketChannel* ch) : Base::SocketUnsafe(ch), ch_(ch) {}
    void Bind(const SocketAddress& local, ChannelPromise promise) override {
      ch_->DoBind(local, std::move(promise));
    }
    void Connect(const SocketAddress&, const SocketAddress&, ChannelPromise promise) override {
      promise.TryFailure(absl::UnimplementedError("a server channel does not connect"));
    }
    void BeginRead() override { ch_->DoBeginRead(); }
    void Write(Message, ChannelPromise promise) override {
      ch_->FailWrite(promise, absl::UnimplementedError("a server channel does not write"));
    }
    void Flush() override {}

   private:
    AbstractServerSocketChannel* const ch_;
  };

  void DoBind(const SocketAddress& local, ChannelPromise promise);
  void DoBeginRead();
  void AcceptReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  void InitChild(int fd) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);
  void BackOff() ABSL_EXCLUSIVE_LOCKS_REQUIRED(this->loop_affinity_);

  ServerUnsafe unsafe_{this};
  const ChildSetup setup_;
  // Relaxed: statistics.
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> backoffs_{0};
  bool read_requested_ ABSL_GUARDED_BY(this->loop_affinity_) = false;
  bool backing_off_ ABSL_GUARDED_BY(this->loop_affinity_) = false;
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_ABSTRACT_SERVER_SOCKET_CHANNEL_H_
