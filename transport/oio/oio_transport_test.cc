// The OIO transport end to end on 127.0.0.1: thread-per-channel loops, the channel
// cap, closing from foreign threads, and echo through the bootstraps.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/concurrent/promise.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_socket_channel.h"
#include "gyre/transport/oio/oio_event_loop_group.h"
#include "gyre/transport/oio/oio_server_socket_channel.h"
#include "gyre/transport/oio/oio_socket_channel.h"
#include "gyre/transport/oio/thread_per_channel_event_loop.h"
#include "gyre/testing/budget.h"
#include "gyre/testing/embedded_event_loop.h"
#include "gyre/testing/stream_test_util.h"

namespace gyre {
namespace {

const absl::Duration kWait = gyre::testing::Scaled(absl::Seconds(30));

// Remembers the loop of every channel that became active.
class LoopRecorder : public ChannelInboundHandler {
 public:
  explicit LoopRecorder(Promise<EventLoop*> loop) : loop_(loop) {}
  bool IsSharable() const override { return true; }
  void ChannelActive(ChannelHandlerContext& ctx) override {
    loop_.TrySuccess(ctx.channel().event_loop());
    ctx.FireChannelActive();
  }

 private:
  Promise<EventLoop*> loop_;
};

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until `size` bytes or EOF / error.
std::string ReadUpTo(int fd, size_t size) {
  std::string out;
  char buf[16384];
  while (out.size() < size) {
    ssize_t n = recv(fd, buf, std::min(sizeof(buf), size - out.size()), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A blocking listening socket on 127.0.0.1, port 0; sets *port.
int ListenRaw(uint16_t* port) {
  int fd = testing::BoundNotListening(port);
  if (fd >= 0 && listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

struct Server {
  std::unique_ptr<OioEventLoopGroup> boss;
  std::unique_ptr<OioEventLoopGroup> workers;
  std::shared_ptr<Channel> listening;
  uint16_t port = 0;
};

// An OIO echo server on 127.0.0.1:0 whose children may be capped.
absl::StatusOr<Server> StartEchoServer(int max_children,
                                       std::shared_ptr<ChannelHandler> extra = nullptr) {
  Server s;
  auto boss = OioEventLoopGroup::Create();
  if (!boss.ok()) return boss.status();
  auto workers = OioEventLoopGroup::Create(max_children);
  if (!workers.ok()) return workers.status();
  s.boss = *std::move(boss);
  s.workers = *std::move(workers);
  ServerBootstrap server;
  std::shared_ptr<ChannelHandler> echo = std::make_shared<testing::EchoHandler>();
  server.Group(s.boss.get(), s.workers.get())
      .Channel<OioServerSocketChannel>()
      .ChildOption(ChannelOption::kTcpNodelay, true)
      .ChildHandler(std::make_shared<ChannelInitializer>([echo, extra](Channel& ch) {
        if (extra != nullptr) {
          absl::Status added = ch.pipeline().AddLast("extra", extra);
          if (!added.ok()) return added;
        }
        return ch.pipeline().AddLast("echo", echo);
      }));
  absl::StatusOr<std::shared_ptr<Channel>> listening = server.Bind(SocketAddress::Loopback(0)).Sync();
  if (!listening.ok()) return listening.status();
  s.listening = *listening;
  s.port = s.listening->local_address().port();
  return s;
}

void StopServer(Server& s) {
  s.listening->Close().Await().IgnoreError();
  EXPECT_TRUE(s.workers->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
  EXPECT_TRUE(s.boss->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
}

TEST(OioTransportTest, EchoWithFiftyConcurrentClientsIsByteExact) {
  absl::StatusOr<Server> server = StartEchoServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  constexpr int kClients = 50;
  constexpr size_t kBytes = 200 * 1024;
  std::vector<std::string> got(kClients);
  std::vector<std::thread> threads;
  std::atomic<int> connected{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      int fd = testing::ConnectLoopback(server->port);
      if (fd < 0) return;
      connected.fetch_add(1);
      std::string data = testing::PatternBytes(i, kBytes);
      // Write and read at once, so neither side's buffers can fill up and stall.
      std::thread writer([fd, &data] { WriteAll(fd, data); });
      got[i] = ReadUpTo(fd, kBytes);
      writer.join();
      close(fd);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(connected.load(), kClients);
  for (int i = 0; i < kClients; ++i) {
    ASSERT_EQ(got[i].size(), kBytes) << "client " << i;
    EXPECT_TRUE(got[i] == testing::PatternBytes(i, kBytes))
        << "client " << i << " got different bytes";
  }
  StopServer(*server);
}

TEST(OioTransportTest, OioClientsEchoThroughBootstrap) {
  absl::StatusOr<Server> server = StartEchoServer(0);
  ASSERT_TRUE(server.ok()) << server.status();
  auto clients = OioEventLoopGroup::Create();
  ASSERT_TRUE(clients.ok());

  std::string text = "hello over a thread per channel";
  Promise<std::string> reply;
  Bootstrap client;
  client.Group(clients->get())
      .Channel<OioSocketChannel>()
      .Handler(std::make_shared<testing::CollectingHandler>(text.size(), reply));
  absl::StatusOr<std::shared_ptr<Channel>> ch =
      client.Connect(SocketAddress::Loopback(server->port)).Sync();
  ASSERT_TRUE(ch.ok()) << ch.status();
  // A write from a thread that is not the channel's.
  ASSERT_TRUE((*ch)->WriteAndFlush(text).Sync().ok());
  ASSERT_TRUE(reply.AwaitFor(kWait));
  EXPECT_EQ(*reply.GetNow(), text);
  (*ch)->Close().Await().IgnoreError();
  EXPECT_TRUE((*clients)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
  StopServer(*server);
}

TEST(OioTransportTest, ChannelCapRefusesWithResourceExhausted) {
  auto group = OioEventLoopGroup::Create(2);
  ASSERT_TRUE(group.ok());
  auto a = OioSocketChannel::Create();
  auto b = OioSocketChannel::Create();
  auto c = OioSocketChannel::Create();
  ASSERT_TRUE((*group)->Register(a).AwaitFor(kWait));
  ASSERT_TRUE((*group)->Register(b).AwaitFor(kWait));
  EXPECT_EQ((*group)->ActiveChannels(), 2);
  ChannelFuture refused = (*group)->Register(c);
  ASSERT_TRUE(refused.AwaitFor(kWait));
  ASSERT_FALSE(refused.IsSuccess());
  EXPECT_EQ(refused.Cause().code(), absl::StatusCode::kResourceExhausted) << refused.Cause();
  EXPECT_FALSE(c->IsRegistered());

  // Also through a loop handed out by Next(): the loop's Register takes the slot.
  auto d = OioSocketChannel::Create();
  EventLoop* spare = (*group)->Next();
  ChannelFuture refused_too = spare->Register(d);
  ASSERT_TRUE(refused_too.AwaitFor(kWait));
  EXPECT_EQ(refused_too.Cause().code(), absl::StatusCode::kResourceExhausted);

  // A slot frees once a channel's loop has terminated.
  EventLoop* a_loop = a->event_loop();
  ASSERT_NE(a_loop, nullptr);
  ASSERT_TRUE(a->Close().AwaitFor(kWait));
  ASSERT_TRUE(a_loop->TerminationFuture().AwaitFor(kWait));
  ChannelFuture again = (*group)->Register(c);
  ASSERT_TRUE(again.AwaitFor(kWait));
  EXPECT_TRUE(again.IsSuccess()) << again.Cause();
  EXPECT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
  EXPECT_FALSE(b->IsOpen());  // group shutdown closes its channels
}

TEST(OioTransportTest, CappedChildGroupClosesExtraConnectionsAndKeepsServing) {
  absl::StatusOr<Server> server = StartEchoServer(1);
  ASSERT_TRUE(server.ok()) << server.status();
  int first = testing::ConnectLoopback(server->port);
  ASSERT_GE(first, 0);
  ASSERT_TRUE(WriteAll(first, "ping"));
  EXPECT_EQ(ReadUpTo(first, 4), "ping");  // the first child is registered and serving
  int second = testing::ConnectLoopback(server->port);
  ASSERT_GE(second, 0);
  // The second child is refused a loop and closed: EOF (or a reset) without echo.
  (void)WriteAll(second, "pong");
  EXPECT_EQ(ReadUpTo(second, 4), "");
  close(second);
  ASSERT_TRUE(WriteAll(first, "again"));
  EXPECT_EQ(ReadUpTo(first, 5), "again");
  close(first);
  StopServer(*server);
}

// An Echo client channel on its own OioEventLoopGroup, connected to a raw listener, and
// the peer socket accepted for it. The destructor closes the sockets and shuts the
// group down.
struct ClientOfRawPeer {
  int listener = -1;
  int peer = -1;
  std::unique_ptr<OioEventLoopGroup> group;
  std::shared_ptr<Channel> channel;

  ~ClientOfRawPeer() {
    if (peer >= 0) close(peer);
    if (listener >= 0) close(listener);
    if (group != nullptr) {
      EXPECT_TRUE(group->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
    }
  }
};

void ConnectToRawPeer(ClientOfRawPeer* c) {
  uint16_t port = 0;
  c->listener = ListenRaw(&port);
  ASSERT_GE(c->listener, 0);
  absl::StatusOr<std::unique_ptr<OioEventLoopGroup>> group = OioEventLoopGroup::Create();
  ASSERT_TRUE(group.ok()) << group.status();
  c->group = std::move(*group);
  Bootstrap client;
  client.Group(c->group.get())
      .Channel<OioSocketChannel>()
      .Handler(std::make_shared<testing::EchoHandler>());
  absl::StatusOr<std::shared_ptr<Channel>> ch = client.Connect(SocketAddress::Loopback(port)).Sync();
  ASSERT_TRUE(ch.ok()) << ch.status();
  c->channel = *ch;
  c->peer = accept(c->listener, nullptr, nullptr);
  ASSERT_GE(c->peer, 0);
}

TEST(OioTransportTest, CloseFromForeignThreadUnblocksLoopWaitingForBytes) {
  ClientOfRawPeer c;
  ASSERT_NO_FATAL_FAILURE(ConnectToRawPeer(&c));
  EventLoop* loop = c.channel->event_loop();
  // The peer never sends: the channel's thread is waiting for bytes.
  std::thread closer([channel = c.channel] { channel->Close(); });
  closer.join();
  EXPECT_TRUE(c.channel->CloseFuture().AwaitFor(kWait));
  EXPECT_FALSE(c.channel->IsOpen());
  EXPECT_TRUE(loop->TerminationFuture().AwaitFor(kWait));
  EXPECT_EQ(ReadUpTo(c.peer, 1), "");  // the peer sees the close
}

TEST(OioTransportTest, ServerCloseFromForeignThreadUnblocksAccept) {
  auto boss = OioEventLoopGroup::Create();
  auto workers = OioEventLoopGroup::Create();
  ASSERT_TRUE(boss.ok() && workers.ok());
  ServerBootstrap server;
  server.Group(boss->get(), workers->get())
      .Channel<OioServerSocketChannel>()
      .ChildHandler(std::make_shared<testing::EchoHandler>());
  absl::StatusOr<std::shared_ptr<Channel>> listening = server.Bind(SocketAddress::Loopback(0)).Sync();
  ASSERT_TRUE(listening.ok()) << listening.status();
  uint16_t port = (*listening)->local_address().port();
  EventLoop* loop = (*listening)->event_loop();
  std::shared_ptr<Channel> channel = *listening;
  std::thread closer([channel] { channel->Close(); });
  closer.join();
  EXPECT_TRUE((*listening)->CloseFuture().AwaitFor(kWait));
  EXPECT_TRUE(loop->TerminationFuture().AwaitFor(kWait));
  EXPECT_LT(testing::ConnectLoopback(port), 0);  // nobody listens any more
  EXPECT_TRUE((*workers)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
  EXPECT_TRUE((*boss)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
}

TEST(OioTransportTest, PerChannelLoopTerminatesAfterItsChannelCloses) {
  Promise<EventLoop*> child_loop;
  absl::StatusOr<Server> server = StartEchoServer(0, std::make_shared<LoopRecorder>(child_loop));
  ASSERT_TRUE(server.ok()) << server.status();
  int fd = testing::ConnectLoopback(server->port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(child_loop.AwaitFor(kWait));
  EventLoop* loop = *child_loop.GetNow();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->RegisteredChannels(), 1);
  EXPECT_FALSE(loop->IsShuttingDown());
  EXPECT_EQ(server->workers->ActiveChannels(), 1);
  close(fd);  // EOF: the child closes, and its loop ends
  EXPECT_TRUE(loop->TerminationFuture().AwaitFor(kWait));
  EXPECT_TRUE(loop->IsTerminated());
  EXPECT_EQ(server->workers->ActiveChannels(), 0);
  StopServer(*server);
}

TEST(OioTransportTest, ConnectRefusedFailsTheFuture) {
  uint16_t port = 0;
  int probe = ListenRaw(&port);
  ASSERT_GE(probe, 0);
  close(probe);  // nobody listens on `port` now
  auto group = OioEventLoopGroup::Create();
  ASSERT_TRUE(group.ok());
  auto ch = OioSocketChannel::Create();
  ASSERT_TRUE((*group)->Register(ch).Sync().ok());
  ChannelFuture connected = ch->Connect(SocketAddress::Loopback(port));
  ASSERT_TRUE(connected.AwaitFor(kWait));
  ASSERT_FALSE(connected.IsSuccess());
  EXPECT_EQ(connected.Cause().code(), absl::StatusCode::kUnavailable) << connected.Cause();
  EXPECT_TRUE(ch->CloseFuture().AwaitFor(kWait));
  EXPECT_TRUE(ch->event_loop()->TerminationFuture().AwaitFor(kWait));
  EXPECT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
}

TEST(OioTransportTest, BindInUseFailsTheFuture) {
  uint16_t port = 0;
  int taken = ListenRaw(&port);
  ASSERT_GE(taken, 0);
  auto group = OioEventLoopGroup::Create();
  ASSERT_TRUE(group.ok());
  ServerBootstrap server;
  server.Group(group->get()).Channel<OioServerSocketChannel>().ChildHandler(std::make_shared<testing::EchoHandler>());
  absl::StatusOr<std::shared_ptr<Channel>> bound = server.Bind(SocketAddress::Loopback(port)).Sync();
  ASSERT_FALSE(bound.ok());
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kFailedPrecondition) << bound.status();
  close(taken);
  EXPECT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
}

TEST(OioTransportTest, TaskSubmittedWhileChannelIdleBlockedRuns) {
  ClientOfRawPeer c;
  ASSERT_NO_FATAL_FAILURE(ConnectToRawPeer(&c));
  auto* loop = dynamic_cast<ThreadPerChannelEventLoop*>(c.channel->event_loop());
  ASSERT_NE(loop, nullptr);
  // Wait until the loop has gone back to poll with nothing to do: a round trip
  // through its queue, then the peer stays silent.
  ASSERT_TRUE(loop->Submit([] { return 0; }).AwaitFor(kWait));
  Future<bool> ran = loop->Submit([loop] { return loop->InEventLoop(); });
  ASSERT_TRUE(ran.AwaitFor(kWait));
  ASSERT_TRUE(ran.IsSuccess());
  EXPECT_TRUE(*ran.GetNow());
  EXPECT_TRUE(c.channel->IsOpen());
  c.channel->Close().Await().IgnoreError();
}

// A socket channel registers only with its own transport's loops: a loop of the other
// transport, or any other kind, fails the registration with InvalidArgument naming the
// loop type it needs (an oio loop says first what it takes), and leaves the channel
// unregistered.
TEST(OioTransportTest, RegisteringWithAnotherKindOfLoopFails) {
  auto nio = NioEventLoopGroup::Create(1);
  auto oio = OioEventLoopGroup::Create();
  ASSERT_TRUE(nio.ok() && oio.ok());
  testing::EmbeddedEventLoop embedded;
  auto refused = [](EventLoopGroup& loop, std::shared_ptr<Channel> ch) {
    ChannelFuture reg = loop.Register(ch);
    EXPECT_TRUE(reg.AwaitFor(absl::Seconds(10)));
    EXPECT_FALSE(ch->IsRegistered());
    ch->Close().AwaitFor(absl::Seconds(10));
    return reg.IsDone() && reg.Cause().code() == absl::StatusCode::kInvalidArgument
               ? std::string(reg.Cause().message())
               : reg.Cause().ToString();
  };
  const std::string oio_needs = "an oio channel needs a ThreadPerChannelEventLoop";
  const std::string nio_needs = "a nio channel needs a NioEventLoop";
  EXPECT_EQ(refused(**nio, OioSocketChannel::Create()), oio_needs);
  EXPECT_EQ(refused(embedded, OioSocketChannel::Create()), oio_needs);
  EXPECT_EQ(refused(**oio, NioSocketChannel::Create()),
            "a ThreadPerChannelEventLoop needs an oio channel");
  EXPECT_EQ(refused(embedded, NioSocketChannel::Create()), nio_needs);
}

TEST(OioTransportTest, GroupRefusesBadInputWithStatus) {
  EXPECT_EQ(OioEventLoopGroup::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  auto group = OioEventLoopGroup::Create();
  ASSERT_TRUE(group.ok());
  EXPECT_EQ((*group)->Register(nullptr).Cause().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*group)->Execute([] {}).code(), absl::StatusCode::kUnimplemented);
  // One channel per loop.
  auto a = OioSocketChannel::Create();
  ASSERT_TRUE((*group)->Register(a).Sync().ok());
  ChannelFuture second = a->event_loop()->Register(OioSocketChannel::Create());
  ASSERT_TRUE(second.AwaitFor(kWait));
  EXPECT_EQ(second.Cause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(a->IsRegistered());
  EXPECT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(10)).AwaitFor(kWait));
  EXPECT_TRUE((*group)->IsTerminated());
  EXPECT_FALSE(a->IsOpen());
  ChannelFuture late = (*group)->Register(OioSocketChannel::Create());
  ASSERT_TRUE(late.AwaitFor(kWait));
  EXPECT_EQ(late.Cause().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gyre
