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
// The loop watches the listening socket (EPOLLIN) while a read is asked for: with
// AUTO_READ on (the default) always, except during an out-of-fds back-off. Accepting,
// the children, binding and the back-off are AbstractServerSocketChannel's; a null
// ChildSetup::group registers the children with the server's own loop.
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the loop).
// Ownership: shared; the loop holds a reference while registered. The child group is
// not owned and must outlive the server.
#ifndef GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "gyre/channel/event_loop.h"
#include "gyre/transport/abstract_server_socket_channel.h"
#include "gyre/transport/nio/abstract_nio_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"

namespace gyre {

class NioServerSocketChannel;
extern template class AbstractServerSocketChannel<AbstractNioChannel, NioSocketChannel,
                                                  NioServerSocketChannel>;

class NioServerSocketChannel final
    : public AbstractServerSocketChannel<AbstractNioChannel, NioSocketChannel, NioServerSocketChannel> {
 private:
  friend class AbstractServerSocketChannel<AbstractNioChannel, NioSocketChannel, NioServerSocketChannel>;

  using AbstractServerSocketChannel::AbstractServerSocketChannel;  // from a ChildSetup

  // NioIoHandler
  void OnIoEvent(uint32_t events) override;
  // AbstractServerSocketChannel
  void UpdateAcceptInterest() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_);
  EventLoopGroup* DefaultChildGroup() override { return nio_loop(); }
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_NIO_NIO_SERVER_SOCKET_CHANNEL_H_
