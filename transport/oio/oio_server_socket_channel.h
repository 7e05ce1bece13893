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
// registered here with a ChildSetup (whose group is required). A registration refused
// by a capped child group (ResourceExhausted) closes that child and is logged; the
// server goes on accepting. Accepting, binding and the out-of-fds back-off are
// AbstractServerSocketChannel's.
//
// See docs/transport.md.
//
// Thread safety: thread-safe (operations hop to the server's thread).
// Ownership: shared; its loop holds a reference while registered. The child group
// is not owned and must outlive the server.
#ifndef GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_
#define GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "gyre/channel/event_loop.h"
#include "gyre/transport/abstract_server_socket_channel.h"
#include "gyre/transport/oio/abstract_oio_channel.h"
#include "gyre/transport/oio/oio_socket_channel.h"

namespace gyre {

class OioServerSocketChannel;
extern template class AbstractServerSocketChannel<AbstractOioChannel, OioSocketChannel,
                                                  OioServerSocketChannel>;

class OioServerSocketChannel final
    : public AbstractServerSocketChannel<AbstractOioChannel, OioSocketChannel, OioServerSocketChannel> {
 private:
  friend class AbstractServerSocketChannel<AbstractOioChannel, OioSocketChannel, OioServerSocketChannel>;

  using AbstractServerSocketChannel::AbstractServerSocketChannel;  // from a ChildSetup

  // OioIoHandler
  short PollEvents() const override;
  void OnPollEvent(short revents) override;
  // AbstractServerSocketChannel: PollEvents asks AcceptWanted() on every poll.
  void UpdateAcceptInterest() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(loop_affinity_) {}
  // A ChildSetup needs a group (OioEventLoopGroup): there is no default.
  EventLoopGroup* DefaultChildGroup() override { return nullptr; }
};

}  // namespace gyre

#endif  // GYRE_TRANSPORT_OIO_OIO_SERVER_SOCKET_CHANNEL_H_
