// Bootstrap / ServerBootstrap: set up client and server channels in Netty's fluent style.
//
//   ServerBootstrap server;
//   server.Group(boss.get(), workers.get())
//       .Channel<NioServerSocketChannel>()
//       .Option(ChannelOption::kSoBacklog, 1024)
//       .ChildOption(ChannelOption::kTcpNodelay, true)
//       .ChildHandler(std::make_shared<ChannelInitializer>([](gyre::Channel& ch) {
//         return ch.pipeline().AddLast("echo", std::make_shared<Echo>());
//       }));
//   absl::StatusOr<std::shared_ptr<gyre::Channel>> listening =
//       server.Bind(SocketAddress::Loopback(8080)).Sync();
//
//   Bootstrap client;
//   client.Group(workers.get()).Channel<NioSocketChannel>().Handler(handler);
//   Future<std::shared_ptr<gyre::Channel>> connected = client.Connect(address);
//
// Bind / Connect create the channel, apply the options (an invalid one fails the
// future with its InvalidArgument), add the handler, register the channel with the
// group and then bind / connect it; the future completes with the channel, or fails
// with the first error (the channel is closed then). A server channel delivers each
// accepted child as a ChannelRead of `std::shared_ptr<gyre::Channel>`; the bootstrap's
// acceptor applies the child options, adds the child handler and registers the child
// with the child group.
//
// Thread safety: configure from one thread; Bind / Connect may then be called from any
// thread, repeatedly (each makes a new channel).
// Ownership: the bootstrap does not own the groups; they must outlive its channels.
#ifndef GYRE_CHANNEL_BOOTSTRAP_H_
#define GYRE_CHANNEL_BOOTSTRAP_H_

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_option.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/future.h"

namespace gyre {

using ChannelFactory = std::function<absl::StatusOr<std::shared_ptr<gyre::Channel>>()>;

namespace internal {

// Adapts C::Create() (returning StatusOr<shared_ptr<C>> or shared_ptr<C>) to a factory.
template <typename C>
ChannelFactory MakeChannelFactory() {
  return []() -> absl::StatusOr<std::shared_ptr<gyre::Channel>> {
    auto made = C::Create();
    if constexpr (std::is_convertible_v<decltype(made), std::shared_ptr<gyre::Channel>>) {
      if (made == nullptr) return absl::InternalError("channel factory returned null");
      return std::shared_ptr<gyre::Channel>(std::move(made));
    } else {
      if (!made.ok()) return made.status();
      return std::shared_ptr<gyre::Channel>(*std::move(made));
    }
  };
}

// Applies `options` to `channel`; returns the first error.
absl::Status ApplyOptions(gyre::Channel& channel, const std::vector<ChannelOptionSetting>& options);

// Registers `channel` with `group`, then runs `then` (on the channel's loop) to start the
// bind/connect; completes `result` with the channel or the first error.
void RegisterThen(EventLoopGroup* group, std::shared_ptr<gyre::Channel> channel,
                  std::function<ChannelFuture(gyre::Channel&)> then,
                  Promise<std::shared_ptr<gyre::Channel>> result);

}  // namespace internal

// Settings shared by both bootstraps.
template <typename Self>
class AbstractBootstrap {
 public:
  template <typename C>
  Self& Channel() {
    factory_ = internal::MakeChannelFactory<C>();
    return self();
  }
  Self& SetChannelFactory(ChannelFactory factory) {
    factory_ = std::move(factory);
    return self();
  }
  template <typename T>
  Self& Option(ChannelOptionKey<T> key, T value) {
    options_.push_back(ChannelOptionSetting{key.id, key.name, ChannelOptionValue(value)});
    return self();
  }
  Self& Handler(std::shared_ptr<ChannelHandler> handler) {
    handler_ = std::move(handler);
    return self();
  }

 protected:
  Self& self() { return static_cast<Self&>(*this); }

  // Creates and prepares a channel; the error explains what is missing.
  absl::StatusOr<std::shared_ptr<gyre::Channel>> NewChannel() const;

  ChannelFactory factory_;
  std::vector<ChannelOptionSetting> options_;
  std::shared_ptr<ChannelHandler> handler_;
};

class Bootstrap : public AbstractBootstrap<Bootstrap> {
 public:
  Bootstrap& Group(EventLoopGroup* group) {
    group_ = group;
    return *this;
  }

  // Creates, registers and connects a channel to `remote` (optionally from `local`).
  Future<std::shared_ptr<gyre::Channel>> Connect(const SocketAddress& remote,
                                                 const SocketAddress& local = {}) const;
  // Creates, registers and binds a channel (a connectionless or client-side bind).
  Future<std::shared_ptr<gyre::Channel>> Bind(const SocketAddress& local) const;

 private:
  // Creates a channel, registers it with the group, then runs `op` on it.
  Future<std::shared_ptr<gyre::Channel>> NewRegisterThen(
      std::function<ChannelFuture(gyre::Channel&)> op) const;

  EventLoopGroup* group_ = nullptr;
};

class ServerBootstrap : public AbstractBootstrap<ServerBootstrap> {
 public:
  // `boss` accepts connections; `worker` serves the accepted children.
  ServerBootstrap& Group(EventLoopGroup* boss, EventLoopGroup* worker) {
    group_ = boss;
    child_group_ = worker;
    return *this;
  }
  ServerBootstrap& Group(EventLoopGroup* both) { return Group(both, both); }
  template <typename T>
  ServerBootstrap& ChildOption(ChannelOptionKey<T> key, T value) {
    child_options_.push_back(ChannelOptionSetting{key.id, key.name, ChannelOptionValue(value)});
    return *this;
  }
  ServerBootstrap& ChildHandler(std::shared_ptr<ChannelHandler> handler) {
    child_handler_ = std::move(handler);
    return *this;
  }

  // Creates, registers and binds the listening channel.
  Future<std::shared_ptr<gyre::Channel>> Bind(const SocketAddress& local) const;

  // The handler ServerBootstrap puts on the server channel: registers accepted children.
  // Public for transports and tests.
  static std::shared_ptr<ChannelHandler> NewAcceptor(EventLoopGroup* child_group,
                                                     std::shared_ptr<ChannelHandler> child_handler,
                                                     std::vector<ChannelOptionSetting> child_options);

 private:
  EventLoopGroup* group_ = nullptr;
  EventLoopGroup* child_group_ = nullptr;
  std::vector<ChannelOptionSetting> child_options_;
  std::shared_ptr<ChannelHandler> child_handler_;
};

template <typename Self>
absl::StatusOr<std::shared_ptr<gyre::Channel>> AbstractBootstrap<Self>::NewChannel() const {
  if (!factory_) return absl::FailedPreconditionError("bootstrap: Channel<...>() not set");
  absl::StatusOr<std::shared_ptr<gyre::Channel>> channel = factory_();
  if (!channel.ok()) return channel.status();
  absl::Status applied = internal::ApplyOptions(**channel, options_);
  if (!applied.ok()) return applied;
  if (handler_ != nullptr) {
    absl::Status added = (*channel)->pipeline().AddLast("", handler_);
    if (!added.ok()) return added;
  }
  return channel;
}

}  // namespace gyre

#endif  // GYRE_CHANNEL_BOOTSTRAP_H_
