#include "gyre/testing/stream_test_util.h"
#include "gyre/transport/nio/nio_socket_channel.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_events.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/concurrent/promise.h"
#include "gyre/testing/budget.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"

namespace gyre {
namespace {

const absl::Duration kWait = gyre::testing::Scaled(absl::Seconds(30));

ByteBuf Bytes(absl::string_view s) {
  absl::StatusOr<ByteBuf> b = PooledByteBufAllocator::Default()->CopiedBuffer(s);
  EXPECT_TRUE(b.ok()) << b.status();
  return *std::move(b);
}

using testing::Collector;

class NioSocketChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bosses_ = *NioEventLoopGroup::Create(1);
    workers_ = *NioEventLoopGroup::Create(2);
    clients_ = *NioEventLoopGroup::Create(2);
  }
  // The acceptor first: it may still be handing a late connection to the workers.
  void TearDown() override {
    bosses_.reset();
    workers_.reset();
    clients_.reset();
  }

  // A server on 127.0.0.1 (ephemeral port) whose children get `init`.
  std::shared_ptr<NioServerSocketChannel> StartServer(
      std::function<void(NioSocketChannel&)> init,
      std::vector<ChannelOptionSetting> child_options = {}) {
    NioServerSocketChannel::ChildSetup setup;
    setup.group = workers_.get();
    setup.initializer = std::move(init);
    setup.options = std::move(child_options);
    std::shared_ptr<NioServerSocketChannel> server = NioServerSocketChannel::Create(std::move(setup));
    absl::Status bound =
        testing::RegisterAndBind(*bosses_, server, SocketAddress::Loopback(0), kWait);
    EXPECT_TRUE(bound.ok()) << bound;
    return server;
  }

  std::shared_ptr<NioSocketChannel> NewClient(std::shared_ptr<ChannelHandler> handler) {
    std::shared_ptr<NioSocketChannel> ch = NioSocketChannel::Create();
    if (handler != nullptr) {
      EXPECT_TRUE(ch->pipeline().AddLast("collector", std::move(handler)).ok());
    }
    ChannelFuture reg = clients_->Register(ch);
    EXPECT_TRUE(reg.AwaitFor(kWait));
    EXPECT_TRUE(reg.IsSuccess()) << reg.Cause();
    return ch;
  }

  // Connects `client` to `server`'s port on 127.0.0.1 and waits for the connect to
  // succeed.
  static void ConnectTo(Channel& client, const Channel& server) {
    ChannelFuture c = client.Connect(SocketAddress::Loopback(server.local_address().port()));
    ASSERT_TRUE(c.AwaitFor(kWait));
    ASSERT_TRUE(c.IsSuccess()) << c.Cause();
  }

  std::unique_ptr<NioEventLoopGroup> bosses_;
  std::unique_ptr<NioEventLoopGroup> workers_;
  std::unique_ptr<NioEventLoopGroup> clients_;
};

TEST_F(NioSocketChannelTest, EchoTwoHundredConcurrentClientsByteExact) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  const uint16_t port = server->local_address().port();
  ASSERT_NE(port, 0);
  constexpr int kClients = 200;
  constexpr size_t kSize = 32 * 1000 + 7;
  struct Client {
    std::shared_ptr<NioSocketChannel> ch;
    std::shared_ptr<Collector> collector;
    std::string payload;
  };
  std::vector<Client> clients;
  for (int i = 0; i < kClients; ++i) {
    Client c;
    c.payload = testing::PatternBytes(i, kSize);
    c.collector = std::make_shared<Collector>(kSize);
    c.ch = NewClient(c.collector);
    clients.push_back(std::move(c));
  }
  std::vector<ChannelFuture> connects;
  for (Client& c : clients) connects.push_back(c.ch->Connect(SocketAddress::Loopback(port)));
  for (ChannelFuture& f : connects) {
    ASSERT_TRUE(f.AwaitFor(kWait));
    ASSERT_TRUE(f.IsSuccess()) << f.Cause();
  }
  // Writes from several threads at once, in uneven chunks.
  std::vector<std::thread> writers;
  for (int t = 0; t < 5; ++t) {
    writers.emplace_back([&clients, t] {
      for (int i = t; i < kClients; i += 5) {
        const std::string& p = clients[i].payload;
        for (size_t off = 0; off < p.size();) {
          size_t n = std::min<size_t>(p.size() - off, 300 + 997 * (i % 13));
          clients[i].ch->Write(Bytes(absl::string_view(p).substr(off, n)));
          off += n;
        }
        clients[i].ch->Flush();
      }
    });
  }
  for (std::thread& w : writers) w.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(clients[i].collector->all_.AwaitFor(kWait)) << "client " << i;
    const std::string* got = clients[i].collector->all_.GetNow();
    ASSERT_NE(got, nullptr);
    EXPECT_TRUE(*got == clients[i].payload) << "client " << i << " got " << got->size() << " bytes";
  }
  EXPECT_EQ(server->AcceptedCount(), kClients);
  for (Client& c : clients) ASSERT_TRUE(c.ch->Close().AwaitFor(kWait));
}

TEST_F(NioSocketChannelTest, ConnectionRefusedFailsTheFuture) {
  // A bound socket that does not listen: connecting to it is refused.
  uint16_t port = 0;
  int fd = testing::BoundNotListening(&port);
  ASSERT_GE(fd, 0);

  auto collector = std::make_shared<Collector>();
  std::shared_ptr<NioSocketChannel> ch = NewClient(collector);
  ChannelFuture f = ch->Connect(SocketAddress::Loopback(port));
  ASSERT_TRUE(f.AwaitFor(kWait));
  EXPECT_FALSE(f.IsSuccess());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kUnavailable) << f.Cause();
  ASSERT_TRUE(ch->CloseFuture().AwaitFor(kWait));
  EXPECT_FALSE(ch->IsOpen());
  EXPECT_FALSE(ch->IsActive());
  close(fd);
}

TEST_F(NioSocketChannelTest, ConnectTimeoutFailsWithDeadlineExceeded) {
  // A listener that never accepts, with its accept queue filled: the kernel drops
  // further SYNs, so a new connect neither succeeds nor fails until it times out.
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  SocketAddress any = SocketAddress::Loopback(0);
  ASSERT_EQ(bind(listener, any.sockaddr_ptr(), any.sockaddr_len()), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  sockaddr_in sin{};
  socklen_t len = sizeof(sin);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&sin), &len), 0);
  const SocketAddress target = SocketAddress::Loopback(ntohs(sin.sin_port));
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    int f = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(f, 0);
    (void)connect(f, target.sockaddr_ptr(), target.sockaddr_len());
    fillers.push_back(f);
  }

  std::shared_ptr<NioSocketChannel> ch = NewClient(nullptr);
  ASSERT_TRUE(ch->config().Set(ChannelOption::kConnectTimeout, absl::Milliseconds(200)).ok());
  const auto start = std::chrono::steady_clock::now();
  ChannelFuture f = ch->Connect(target);
  ASSERT_TRUE(f.AwaitFor(kWait));
  const absl::Duration took = absl::FromChrono(std::chrono::steady_clock::now() - start);
  for (int fd : fillers) close(fd);
  close(listener);
  // Whether the kernel drops the SYN or answers it depends on its backlog handling; only
  // a connect that stayed unanswered can be checked.
  if (f.IsSuccess() || f.Cause().code() != absl::StatusCode::kDeadlineExceeded) {
    GTEST_SKIP() << "this kernel answered the connect: " << f.Cause();
  }
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kDeadlineExceeded) << f.Cause();
  EXPECT_GE(took, absl::Milliseconds(200));
  ASSERT_TRUE(ch->CloseFuture().AwaitFor(kWait));
  EXPECT_FALSE(ch->IsOpen());
}

TEST_F(NioSocketChannelTest, BindToAPortInUseFailsTheFuture) {
  auto first = StartServer(nullptr);
  const uint16_t port = first->local_address().port();
  NioServerSocketChannel::ChildSetup setup;
  setup.group = workers_.get();
  auto second = NioServerSocketChannel::Create(std::move(setup));
  ASSERT_TRUE(bosses_->Register(second).AwaitFor(kWait));
  ChannelFuture f = second->Bind(SocketAddress::Loopback(port));
  ASSERT_TRUE(f.AwaitFor(kWait));
  EXPECT_FALSE(f.IsSuccess());
  // EADDRINUSE, mapped as absl::ErrnoToStatusCode does.
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kFailedPrecondition) << f.Cause();
  EXPECT_NE(f.Cause().message().find("in use"), absl::string_view::npos) << f.Cause();
  EXPECT_FALSE(second->IsActive());
  // The first server still serves.
  auto collector = std::make_shared<Collector>();
  auto client = NewClient(collector);
  ChannelFuture c = client->Connect(SocketAddress::Loopback(port));
  ASSERT_TRUE(c.AwaitFor(kWait));
  EXPECT_TRUE(c.IsSuccess()) << c.Cause();
  ASSERT_TRUE(first->Close().AwaitFor(kWait));
  ASSERT_TRUE(first->CloseFuture().AwaitFor(kWait));
  EXPECT_EQ(bosses_->Next()->RegisteredChannels(), 1);  // `second` only
}

TEST_F(NioSocketChannelTest, CloseFromAForeignThread) {
  Promise<std::shared_ptr<Collector>> server_side(nullptr);
  auto server = StartServer([&server_side](NioSocketChannel& child) {
    auto c = std::make_shared<Collector>();
    ASSERT_TRUE(child.pipeline().AddLast("collector", c).ok());
    server_side.TrySuccess(c);
  });
  auto collector = std::make_shared<Collector>();
  auto client = NewClient(collector);
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ASSERT_TRUE(server_side.AwaitFor(kWait));
  EventLoop* loop = client->event_loop();
  ASSERT_NE(loop, nullptr);
  const int registered = loop->RegisteredChannels();
  EXPECT_GE(registered, 1);

  // Queued but never flushed: fails when the channel closes.
  ChannelFuture unflushed = client->Write(Bytes("never sent"));
  ChannelFuture closed;
  std::thread foreign([&] { closed = client->Close(); });
  foreign.join();
  ASSERT_TRUE(closed.AwaitFor(kWait));
  EXPECT_TRUE(closed.IsSuccess()) << closed.Cause();
  ASSERT_TRUE(client->CloseFuture().AwaitFor(kWait));
  ASSERT_TRUE(unflushed.AwaitFor(kWait));
  EXPECT_EQ(unflushed.Cause().code(), absl::StatusCode::kFailedPrecondition) << unflushed.Cause();
  ASSERT_TRUE(collector->unregistered_.AwaitFor(kWait));
  EXPECT_EQ(collector->events(),
            (std::vector<std::string>{"active", "inactive", "unregistered"}));
  EXPECT_FALSE(client->IsOpen());
  // A write after close fails at once.
  ChannelFuture late = client->WriteAndFlush(Bytes("late"));
  ASSERT_TRUE(late.AwaitFor(kWait));
  EXPECT_FALSE(late.IsSuccess());
  // The peer sees the end of the stream.
  std::shared_ptr<Collector> peer = *server_side.GetNow();
  ASSERT_TRUE(peer->unregistered_.AwaitFor(kWait));
  EXPECT_EQ(peer->events(), (std::vector<std::string>{"active", "inactive", "unregistered"}));
  // Closing twice is harmless.
  ChannelFuture again = client->Close();
  ASSERT_TRUE(again.AwaitFor(kWait));
  EXPECT_TRUE(again.IsSuccess());
}

TEST_F(NioSocketChannelTest, WritabilityFlipsAtTheWaterMarks) {
  Promise<std::shared_ptr<NioSocketChannel>> child_p(nullptr);
  auto sink = std::make_shared<Collector>();
  auto server = StartServer(
      [&child_p, sink](NioSocketChannel& child) {
        ASSERT_TRUE(child.pipeline().AddLast("sink", sink).ok());
        child_p.TrySuccess(std::static_pointer_cast<NioSocketChannel>(child.shared_from_this()));
      },
      {ChannelOptionSetting{ChannelOptionId::kAutoRead, "AUTO_READ", false},
       ChannelOptionSetting{ChannelOptionId::kSoRcvbuf, "SO_RCVBUF", 64 * 1024}});
  auto collector = std::make_shared<Collector>();
  auto client = NewClient(collector);
  ASSERT_TRUE(client->config().Set(ChannelOption::kSoSndbuf, 64 * 1024).ok());
  ASSERT_TRUE(client->config().Set(ChannelOption::kWriteBufferHighWaterMark, 64 * 1024).ok());
  ASSERT_TRUE(client->config().Set(ChannelOption::kWriteBufferLowWaterMark, 16 * 1024).ok());
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ASSERT_TRUE(child_p.AwaitFor(kWait));
  EXPECT_TRUE(client->IsWritable());

  constexpr int kChunks = 64;
  constexpr size_t kChunk = 64 * 1024;
  std::vector<ChannelFuture> writes;
  for (int i = 0; i < kChunks; ++i) {
    writes.push_back(client->Write(Bytes(testing::PatternBytes(i, kChunk))));
  }
  client->Flush();
  ASSERT_TRUE(collector->unwritable_.AwaitFor(kWait));
  EXPECT_FALSE(client->IsWritable());
  EXPECT_GT(client->PendingOutboundBytes(), 64 * 1024);
  EXPECT_FALSE(collector->writable_again_.IsDone());
  EXPECT_FALSE(writes.back().IsDone());

  // The peer starts reading: the queue drains below the low mark.
  std::shared_ptr<NioSocketChannel> child = *child_p.GetNow();
  ASSERT_TRUE(child->config().Set(ChannelOption::kAutoRead, true).ok());
  ASSERT_TRUE(collector->writable_again_.AwaitFor(kWait))
      << "peer read " << sink->bytes() << " bytes; pending " << client->PendingOutboundBytes();
  for (ChannelFuture& w : writes) {
    ASSERT_TRUE(w.AwaitFor(kWait));
    EXPECT_TRUE(w.IsSuccess()) << w.Cause();
  }
  EXPECT_TRUE(client->IsWritable());
  EXPECT_EQ(client->PendingOutboundBytes(), 0);
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
  ASSERT_TRUE(sink->inactive_.AwaitFor(kWait));
  EXPECT_EQ(sink->bytes(), kChunks * kChunk);
}

TEST_F(NioSocketChannelTest, AutoReadOffReadsOnlyOnRequest) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  auto collector = std::make_shared<Collector>(5);
  auto client = NewClient(collector);
  ASSERT_TRUE(client->config().Set(ChannelOption::kAutoRead, false).ok());
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ChannelFuture w = client->WriteAndFlush(Bytes("hello"));
  ASSERT_TRUE(w.AwaitFor(kWait));
  ASSERT_TRUE(w.IsSuccess());
  // Nothing is read until asked (the echo is waiting in the socket).
  EXPECT_FALSE(collector->all_.AwaitFor(absl::Milliseconds(100)));
  client->Read();
  ASSERT_TRUE(collector->all_.AwaitFor(kWait));
  EXPECT_EQ(*collector->all_.GetNow(), "hello");
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
}

// Each write's listener writes the next piece: writes re-enter from inside the flush.
void WriteChain(std::shared_ptr<NioSocketChannel> ch, int i, int n) {
  if (i == n) return;
  ch->WriteAndFlush(Bytes(absl::StrCat(i, ","))).AddListener([ch, i, n](const ChannelFuture& f) {
    if (f.IsSuccess()) WriteChain(ch, i + 1, n);
  });
}

TEST_F(NioSocketChannelTest, WritesFromWriteListenersKeepTheirOrder) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  std::string expected;
  constexpr int kPieces = 500;
  for (int i = 0; i < kPieces; ++i) absl::StrAppend(&expected, i, ",");
  auto collector = std::make_shared<Collector>(expected.size());
  auto client = NewClient(collector);
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  WriteChain(client, 0, kPieces);
  ASSERT_TRUE(collector->all_.AwaitFor(kWait)) << "got " << collector->bytes() << " bytes";
  EXPECT_EQ(*collector->all_.GetNow(), expected);
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
}

TEST_F(NioSocketChannelTest, WritesBeforeTheConnectCompletesAreSent) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  auto collector = std::make_shared<Collector>(4);
  auto client = NewClient(collector);
  ChannelFuture c = client->Connect(SocketAddress::Loopback(server->local_address().port()));
  ChannelFuture w = client->WriteAndFlush(Bytes("ping"));
  ASSERT_TRUE(w.AwaitFor(kWait));
  EXPECT_TRUE(w.IsSuccess()) << w.Cause();
  EXPECT_TRUE(c.IsSuccess());
  ASSERT_TRUE(collector->all_.AwaitFor(kWait));
  EXPECT_EQ(*collector->all_.GetNow(), "ping");
}

// Hears the first exception that reaches it.
class FirstException : public ChannelInboundHandler {
 public:
  void ExceptionCaught(ChannelHandlerContext&, absl::Status cause) override {
    first.TrySuccess(std::move(cause));
  }
  Promise<absl::Status> first;
};

// Writes with the void promise (an echo's way of writing, with nothing to allocate or
// complete per write): the bytes go out; a write the socket channel cannot take (not a
// buffer) reaches ExceptionCaught, since no promise can tell the writer.
TEST_F(NioSocketChannelTest, VoidPromiseWritesAreSentAndTheirFailuresReachExceptionCaught) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  auto collector = std::make_shared<Collector>(4);
  auto client = NewClient(collector);
  auto errors = std::make_shared<FirstException>();
  ASSERT_TRUE(client->pipeline().AddFirst("errors", errors).ok());  // before the collector
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  client->WriteAndFlush(Bytes("void"), VoidPromise());
  ASSERT_TRUE(collector->all_.AwaitFor(kWait));
  EXPECT_EQ(*collector->all_.GetNow(), "void");
  EXPECT_FALSE(errors->first.IsDone());
  client->WriteAndFlush(42, VoidPromise());
  ASSERT_TRUE(errors->first.AwaitFor(kWait));
  const absl::Status cause = *errors->first.GetNow();
  EXPECT_EQ(cause.code(), absl::StatusCode::kInvalidArgument) << cause;
  EXPECT_TRUE(client->IsOpen());
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
}

// A connect future completes only once the channel is active, as Netty marks the
// channel active before it completes the promise: a listener on the future, and a
// thread woken by it, both see IsActive().
TEST_F(NioSocketChannelTest, ConnectFutureCompletesOnlyOnceTheChannelIsActive) {
  auto server = StartServer([](NioSocketChannel&) {});
  constexpr int kConnections = 20;
  std::atomic<int> active_in_listener{0}, listened{0};
  for (int i = 0; i < kConnections; ++i) {
    auto client = NewClient(nullptr);
    ChannelFuture c = client->Connect(SocketAddress::Loopback(server->local_address().port()));
    c.AddListener([&, client](const ChannelFuture& f) {
      if (f.IsSuccess() && client->IsActive()) active_in_listener.fetch_add(1);
      listened.fetch_add(1);
    });
    ASSERT_TRUE(c.AwaitFor(kWait));
    ASSERT_TRUE(c.IsSuccess()) << c.Cause();
    EXPECT_TRUE(client->IsActive()) << "connection " << i;
    ASSERT_TRUE(client->Close().AwaitFor(kWait));
  }
  ASSERT_TRUE(testing::Eventually([&] { return listened.load() == kConnections; }));
  EXPECT_EQ(active_in_listener.load(), kConnections);
}

TEST_F(NioSocketChannelTest, RegisteringTwiceFails) {
  std::shared_ptr<NioSocketChannel> ch = NioSocketChannel::Create();
  // Two racing registrations from two threads: exactly one wins.
  ChannelFuture a, b;
  std::thread t1([&] { a = clients_->Register(ch); });
  std::thread t2([&] { b = workers_->Register(ch); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a.AwaitFor(kWait));
  ASSERT_TRUE(b.AwaitFor(kWait));
  EXPECT_NE(a.IsSuccess(), b.IsSuccess());
  const absl::Status lost = a.IsSuccess() ? b.Cause() : a.Cause();
  EXPECT_EQ(lost.code(), absl::StatusCode::kFailedPrecondition) << lost;
  EXPECT_TRUE(ch->IsRegistered());
  EXPECT_EQ(clients_->Register(nullptr).Cause().code(), absl::StatusCode::kInvalidArgument);
}

// B26 (a documented divergence): Netty 4.1 lets a deregistered channel register with
// another loop; gyre binds a channel to one loop for life and says so, on the same loop
// or another, and the channel stays usable for Close.
TEST_F(NioSocketChannelTest, DeregisteredChannelCannotRegisterAgainB26) {
  std::shared_ptr<NioSocketChannel> ch = NioSocketChannel::Create();
  ASSERT_TRUE(clients_->Register(ch).Await().ok());
  ChannelFuture dereg = ch->Deregister();
  ASSERT_TRUE(dereg.AwaitFor(kWait));
  ASSERT_TRUE(dereg.IsSuccess()) << dereg.Cause();
  EXPECT_FALSE(ch->IsRegistered());
  for (EventLoopGroup* group : {static_cast<EventLoopGroup*>(clients_.get()),
                                static_cast<EventLoopGroup*>(workers_.get())}) {
    ChannelFuture again = group->Register(ch);
    ASSERT_TRUE(again.AwaitFor(kWait));
    EXPECT_EQ(again.Cause().code(), absl::StatusCode::kFailedPrecondition) << again.Cause();
    EXPECT_NE(again.Cause().message().find("cannot be registered again"), absl::string_view::npos);
  }
  ChannelFuture closed = ch->Close();
  ASSERT_TRUE(closed.AwaitFor(kWait));
  EXPECT_TRUE(closed.IsSuccess()) << closed.Cause();
  EXPECT_FALSE(ch->IsOpen());
}

// B117: a group's Register hands channels to its loops in turn (through Next()).
TEST_F(NioSocketChannelTest, GroupRegisterSpreadsChannelsOverItsLoops) {
  std::shared_ptr<NioSocketChannel> a = NioSocketChannel::Create();
  std::shared_ptr<NioSocketChannel> b = NioSocketChannel::Create();
  ASSERT_TRUE(clients_->Register(a).Await().ok());
  ASSERT_TRUE(clients_->Register(b).Await().ok());
  EXPECT_NE(a->event_loop(), b->event_loop());
  const std::vector<NioEventLoop*> loops = clients_->loops();
  for (const auto& ch : {a, b}) {
    EXPECT_NE(std::find(loops.begin(), loops.end(), ch->event_loop()), loops.end());
  }
  ASSERT_TRUE(a->Close().Await().ok());
  ASSERT_TRUE(b->Close().Await().ok());
}

TEST_F(NioSocketChannelTest, ServerKeepsServingAfterSelectorRebuild) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  ASSERT_TRUE(bosses_->RebuildSelectors().AwaitFor(kWait));
  ASSERT_TRUE(workers_->RebuildSelectors().AwaitFor(kWait));
  auto collector = std::make_shared<Collector>(3);
  auto client = NewClient(collector);
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ASSERT_TRUE(clients_->RebuildSelectors().AwaitFor(kWait));
  client->WriteAndFlush(Bytes("abc"));
  ASSERT_TRUE(collector->all_.AwaitFor(kWait));
  EXPECT_EQ(*collector->all_.GetNow(), "abc");
}


// The byte at offset `o` of a long generated stream.
char StreamByte(uint64_t o) { return static_cast<char>((o ^ (o >> 9) ^ (o >> 17)) & 0xff); }

// Writes `total` bytes of the generated stream in `chunk`-sized writes, only while the
// channel is writable (resuming on the writability change), then closes. Records the
// largest outbound backlog seen after a write. All on the channel's loop.
class Pumper final : public ChannelInboundHandler {
 public:
  Pumper(uint64_t total, size_t chunk) : total_(total), chunk_(chunk) {}

  void ChannelActive(ChannelHandlerContext& ctx) override {
    Pump(ctx);
    ctx.FireChannelActive();
  }
  void ChannelWritabilityChanged(ChannelHandlerContext& ctx) override {
    if (ctx.channel().IsWritable()) {
      writable_again_.fetch_add(1);
      Pump(ctx);
    } else {
      unwritable_.fetch_add(1);
    }
    ctx.FireChannelWritabilityChanged();
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override {}

  std::atomic<int64_t> max_pending_{0};
  std::atomic<int> unwritable_{0};
  std::atomic<int> writable_again_{0};
  Promise<void> done_{nullptr};

 private:
  void Pump(ChannelHandlerContext& ctx) {
    auto& ch = static_cast<NioSocketChannel&>(ctx.channel());
    bool wrote = false;
    while (sent_ < total_ && ch.IsWritable()) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_, total_ - sent_));
      std::string bytes(n, '\0');
      for (size_t i = 0; i < n; ++i) bytes[i] = StreamByte(sent_ + i);
      ChannelFuture f = ctx.Write(Bytes(bytes));
      sent_ += n;
      wrote = true;
      max_pending_.store(std::max(max_pending_.load(), ch.PendingOutboundBytes()));
      if (sent_ == total_) {
        std::shared_ptr<Channel> self = ch.shared_from_this();
        Promise<void> done = done_;
        f.AddListener([self, done](const ChannelFuture& w) mutable {
          if (w.IsSuccess()) {
            done.TrySuccess();
          } else {
            done.TryFailure(w.Cause());
          }
          self->Close();
        });
      }
    }
    if (wrote) ctx.Flush();
  }

  const uint64_t total_;
  const size_t chunk_;
  uint64_t sent_ = 0;  // loop-confined
};

TEST_F(NioSocketChannelTest, SixtyFourMiBToASlowReaderStaysWithinTheWaterMarks) {
  constexpr uint64_t kTotal = 64ull << 20;
  constexpr size_t kChunk = 16 * 1024;
  constexpr int kHigh = 256 * 1024;
  constexpr int kLow = 64 * 1024;
  auto pumper = std::make_shared<Pumper>(kTotal, kChunk);
  auto server = StartServer(
      [pumper](NioSocketChannel& child) {
        ASSERT_TRUE(child.pipeline().AddLast("pump", pumper).ok());
      },
      {ChannelOptionSetting{ChannelOptionId::kWriteBufferHighWaterMark,
                            "WRITE_BUFFER_HIGH_WATER_MARK", kHigh},
       ChannelOptionSetting{ChannelOptionId::kWriteBufferLowWaterMark,
                            "WRITE_BUFFER_LOW_WATER_MARK", kLow},
       ChannelOptionSetting{ChannelOptionId::kSoSndbuf, "SO_SNDBUF", 32 * 1024}});
  int fd = testing::ConnectLoopback(server->local_address().port(), 16 * 1024);
  ASSERT_GE(fd, 0);
  // The slow reader: small reads, checking every byte.
  uint64_t got = 0;
  uint64_t first_bad = UINT64_MAX;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != StreamByte(got + static_cast<uint64_t>(i)) && first_bad == UINT64_MAX) {
        first_bad = got + static_cast<uint64_t>(i);
      }
    }
    got += static_cast<uint64_t>(n);
  }
  close(fd);
  ASSERT_TRUE(pumper->done_.AwaitFor(kWait));
  EXPECT_TRUE(pumper->done_.IsSuccess()) << pumper->done_.Cause();
  EXPECT_EQ(got, kTotal);
  EXPECT_EQ(first_bad, UINT64_MAX) << "first wrong byte at offset " << first_bad;
  // Memory stayed bounded: the writer stopped at the high mark, so the backlog never
  // exceeded it by more than one write.
  EXPECT_LE(pumper->max_pending_.load(), kHigh + static_cast<int64_t>(kChunk));
  EXPECT_GT(pumper->max_pending_.load(), kHigh);
  // Writability flipped many times, and came back each time.
  EXPECT_GE(pumper->unwritable_.load(), 10);
  EXPECT_EQ(pumper->writable_again_.load(), pumper->unwritable_.load());
}

// Records the half-close events; on the peer's FIN answers with the byte count, then
// shuts down its own output.
class HalfCloseProbe final : public ChannelInboundHandler {
 public:
  explicit HalfCloseProbe(bool answer) : answer_(answer) {}

  void ChannelRead(ChannelHandlerContext&, Message msg) override {
    if (ByteBuf* b = msg.Get<ByteBuf>()) {
      std::lock_guard<std::mutex> lock(mu_);
      absl::StrAppend(&data_, b->ReadableView());
    }
  }
  void UserEventTriggered(ChannelHandlerContext& ctx, Message event) override {
    if (event.Get<ChannelInputShutdownEvent>() != nullptr) {
      open_at_input_shutdown_.store(ctx.channel().IsOpen());
      input_shutdown_.TrySuccess();
      if (answer_) {
        auto& ch = static_cast<NioSocketChannel&>(ctx.channel());
        std::shared_ptr<Channel> self = ch.shared_from_this();
        ctx.WriteAndFlush(Bytes(absl::StrCat("got ", bytes())))
            .AddListener([self, this](const ChannelFuture& f) {
              answer_written_.TrySuccess(f.IsSuccess() ? absl::OkStatus() : f.Cause());
              static_cast<NioSocketChannel&>(*self).ShutdownOutput();
            });
      }
      return;
    }
    if (event.Get<ChannelOutputShutdownEvent>() != nullptr) {
      output_shutdown_.TrySuccess();
      return;
    }
    ctx.FireUserEventTriggered(std::move(event));
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override {}

  std::string data() {
    std::lock_guard<std::mutex> lock(mu_);
    return data_;
  }
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return data_.size();
  }

  std::atomic<bool> open_at_input_shutdown_{false};
  Promise<void> input_shutdown_{nullptr};
  Promise<void> output_shutdown_{nullptr};
  Promise<absl::Status> answer_written_{nullptr};

 private:
  const bool answer_;
  std::mutex mu_;
  std::string data_;
};

TEST_F(NioSocketChannelTest, HalfClosureKeepsTheChannelOpenForWritingAfterThePeersFin) {
  auto server_probe = std::make_shared<HalfCloseProbe>(/*answer=*/true);
  Promise<std::shared_ptr<Channel>> child_p(nullptr);
  auto server = StartServer(
      [server_probe, &child_p](NioSocketChannel& child) {
        ASSERT_TRUE(child.pipeline().AddLast("probe", server_probe).ok());
        child_p.TrySuccess(child.shared_from_this());
      },
      {ChannelOptionSetting{ChannelOptionId::kAllowHalfClosure, "ALLOW_HALF_CLOSURE", true}});
  auto client_probe = std::make_shared<HalfCloseProbe>(/*answer=*/false);
  auto client = NewClient(client_probe);
  ASSERT_TRUE(client->config().Set(ChannelOption::kAllowHalfClosure, true).ok());
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ChannelFuture w = client->WriteAndFlush(Bytes("hello"));
  ASSERT_TRUE(w.AwaitFor(kWait));
  ASSERT_TRUE(w.IsSuccess()) << w.Cause();

  ChannelFuture shut = client->ShutdownOutput();
  ASSERT_TRUE(shut.AwaitFor(kWait));
  ASSERT_TRUE(shut.IsSuccess()) << shut.Cause();
  EXPECT_TRUE(client->IsOutputShutdown());
  ASSERT_TRUE(client_probe->output_shutdown_.AwaitFor(kWait));
  // Writing after the FIN fails (the channel still reads: the answer below arrives
  // after this point; it may close any time after that, so its state is not checked).
  ChannelFuture late = client->WriteAndFlush(Bytes("late"));
  ASSERT_TRUE(late.AwaitFor(kWait));
  EXPECT_EQ(late.Cause().code(), absl::StatusCode::kFailedPrecondition) << late.Cause();

  // The server saw the FIN as an event, stayed open, and its answer got through.
  ASSERT_TRUE(server_probe->input_shutdown_.AwaitFor(kWait));
  EXPECT_TRUE(server_probe->open_at_input_shutdown_.load());
  EXPECT_EQ(server_probe->data(), "hello");
  ASSERT_TRUE(server_probe->answer_written_.AwaitFor(kWait));
  EXPECT_TRUE(server_probe->answer_written_.GetNow()->ok()) << *server_probe->answer_written_.GetNow();

  // The server's own FIN then ends the client's input: both directions are shut, so
  // both channels close.
  ASSERT_TRUE(client_probe->input_shutdown_.AwaitFor(kWait));
  EXPECT_EQ(client_probe->data(), "got 5");
  ASSERT_TRUE(client->CloseFuture().AwaitFor(kWait));
  ASSERT_TRUE(child_p.AwaitFor(kWait));
  ASSERT_TRUE((*child_p.GetNow())->CloseFuture().AwaitFor(kWait));
  EXPECT_TRUE(server_probe->output_shutdown_.IsDone());
}

TEST_F(NioSocketChannelTest, WithoutHalfClosureThePeersFinClosesTheChannel) {
  auto probe = std::make_shared<HalfCloseProbe>(/*answer=*/false);
  Promise<std::shared_ptr<Channel>> child_p(nullptr);
  auto server = StartServer([probe, &child_p](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("probe", probe).ok());
    child_p.TrySuccess(child.shared_from_this());
  });
  int fd = testing::ConnectLoopback(server->local_address().port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(send(fd, "abc", 3, MSG_NOSIGNAL), 3);
  ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
  ASSERT_TRUE(child_p.AwaitFor(kWait));
  ASSERT_TRUE((*child_p.GetNow())->CloseFuture().AwaitFor(kWait));
  EXPECT_FALSE(probe->input_shutdown_.IsDone());
  EXPECT_EQ(probe->data(), "abc");
  char b;
  EXPECT_EQ(recv(fd, &b, 1, 0), 0);  // the server closed its side too
  close(fd);
}

TEST_F(NioSocketChannelTest, ShutdownOutputFailsQueuedWritesAndNeedsAConnection) {
  std::shared_ptr<NioSocketChannel> idle = NewClient(nullptr);
  ChannelFuture not_connected = idle->ShutdownOutput();
  ASSERT_TRUE(not_connected.AwaitFor(kWait));
  EXPECT_EQ(not_connected.Cause().code(), absl::StatusCode::kFailedPrecondition);

  // The server keeps its side open on our FIN, so the client stays open too.
  auto server = StartServer(nullptr, {ChannelOptionSetting{ChannelOptionId::kAllowHalfClosure,
                                                           "ALLOW_HALF_CLOSURE", true}});
  auto client = NewClient(nullptr);
  ASSERT_NO_FATAL_FAILURE(ConnectTo(*client, *server));
  ChannelFuture queued = client->Write(Bytes("never flushed"));
  ChannelFuture shut = client->ShutdownOutput();
  ASSERT_TRUE(shut.AwaitFor(kWait));
  EXPECT_TRUE(shut.IsSuccess()) << shut.Cause();
  ASSERT_TRUE(queued.AwaitFor(kWait));
  EXPECT_EQ(queued.Cause().code(), absl::StatusCode::kFailedPrecondition) << queued.Cause();
  EXPECT_EQ(client->PendingOutboundBytes(), 0);
  ChannelFuture again = client->ShutdownOutput();
  ASSERT_TRUE(again.AwaitFor(kWait));
  EXPECT_TRUE(again.IsSuccess());
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
}

TEST_F(NioSocketChannelTest, PeerResetMidWriteClosesCleanly) {
  const int64_t live_before = PooledByteBufAllocator::Default()->LiveBuffers();
  Promise<std::shared_ptr<NioSocketChannel>> child_p(nullptr);
  auto sink = std::make_shared<Collector>();
  auto server = StartServer([&child_p, sink](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("sink", sink).ok());
    child_p.TrySuccess(std::static_pointer_cast<NioSocketChannel>(child.shared_from_this()));
  });
  int fd = testing::ConnectLoopback(server->local_address().port(), 16 * 1024);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(child_p.AwaitFor(kWait));
  std::shared_ptr<NioSocketChannel> child = *child_p.GetNow();
  // Far more than the socket buffers hold: most of it is still queued at the reset.
  constexpr int kWrites = 64;
  std::vector<ChannelFuture> writes;
  for (int i = 0; i < kWrites; ++i) {
    writes.push_back(child->Write(Bytes(testing::PatternBytes(i, 256 * 1024))));
  }
  child->Flush();
  char buf[4096];
  ASSERT_GT(recv(fd, buf, sizeof(buf), 0), 0);  // the writes are under way
  linger l{1, 0};
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
  close(fd);  // RST

  ASSERT_TRUE(child->CloseFuture().AwaitFor(kWait));
  EXPECT_FALSE(child->IsOpen());
  int failed = 0;
  for (ChannelFuture& w : writes) {
    ASSERT_TRUE(w.AwaitFor(kWait));
    if (!w.IsSuccess()) ++failed;
  }
  EXPECT_GT(failed, 0);
  EXPECT_TRUE(writes.back().IsDone() && !writes.back().IsSuccess());
  ASSERT_TRUE(sink->unregistered_.AwaitFor(kWait));
  EXPECT_EQ(sink->events(), (std::vector<std::string>{"active", "inactive", "unregistered"}));
  EXPECT_EQ(child->PendingOutboundBytes(), 0);
  // Every queued buffer was released.
  writes.clear();
  EXPECT_EQ(PooledByteBufAllocator::Default()->LiveBuffers(), live_before);
}

// Sends `rounds` messages one at a time, each after the echo of the previous one came
// back byte-exact; keeps going past `rounds` until `stop` is set.
class PingPong final : public ChannelInboundHandler {
 public:
  PingPong(int seed, int min_rounds, const std::atomic<bool>* stop)
      : seed_(seed), min_rounds_(min_rounds), stop_(stop) {}

  void ChannelActive(ChannelHandlerContext& ctx) override {
    Send(ctx);
    ctx.FireChannelActive();
  }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    ByteBuf* b = msg.Get<ByteBuf>();
    if (b == nullptr) return;
    absl::StrAppend(&got_, b->ReadableView());
    if (got_.size() < expect_.size()) return;
    if (got_ != expect_) {
      done_.TryFailure(absl::DataLossError(absl::StrCat("round ", rounds_, " differs")));
      return;
    }
    ++rounds_;
    if (rounds_ >= min_rounds_ && stop_->load()) {
      done_.TrySuccess(rounds_);
      return;
    }
    Send(ctx);
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status cause) override {
    done_.TryFailure(cause);
  }
  void ChannelInactive(ChannelHandlerContext& ctx) override {
    done_.TryFailure(absl::AbortedError("connection lost"));
    ctx.FireChannelInactive();
  }

  Promise<int> done_{nullptr};

 private:
  void Send(ChannelHandlerContext& ctx) {
    expect_ = testing::PatternBytes(seed_ * 1000 + rounds_,
                                    100 + static_cast<size_t>((rounds_ * 37) % 3000));
    got_.clear();
    ctx.WriteAndFlush(Bytes(expect_));
  }

  const int seed_;
  const int min_rounds_;
  const std::atomic<bool>* const stop_;
  int rounds_ = 0;  // loop-confined, as the strings
  std::string expect_;
  std::string got_;
};

TEST_F(NioSocketChannelTest, RebuildSelectorsWhileTrafficFlowsLosesNothing) {
  auto server = StartServer([](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  });
  constexpr int kClients = 20;
  std::atomic<bool> stop{false};
  std::vector<std::shared_ptr<PingPong>> pingers;
  std::vector<std::shared_ptr<NioSocketChannel>> chans;
  for (int i = 0; i < kClients; ++i) {
    pingers.push_back(std::make_shared<PingPong>(i, 20, &stop));
    chans.push_back(NewClient(pingers.back()));
  }
  for (auto& ch : chans) {
    ChannelFuture c = ch->Connect(SocketAddress::Loopback(server->local_address().port()));
    ASSERT_TRUE(c.AwaitFor(kWait));
    ASSERT_TRUE(c.IsSuccess()) << c.Cause();
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(workers_->RebuildSelectors().AwaitFor(kWait));
    ASSERT_TRUE(clients_->RebuildSelectors().AwaitFor(kWait));
    ASSERT_TRUE(bosses_->RebuildSelectors().AwaitFor(kWait));
  }
  stop.store(true);
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(pingers[i]->done_.AwaitFor(kWait)) << "client " << i;
    EXPECT_TRUE(pingers[i]->done_.IsSuccess()) << "client " << i << ": " << pingers[i]->done_.Cause();
    EXPECT_TRUE(chans[i]->IsActive()) << "client " << i;
  }
  EXPECT_EQ(server->AcceptedCount(), kClients);
  EXPECT_EQ(workers_->loops()[0]->RegisteredChannels() + workers_->loops()[1]->RegisteredChannels(),
            kClients);
  for (auto& ch : chans) ASSERT_TRUE(ch->Close().AwaitFor(kWait));
}

bool HasIpv6Loopback() {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  SocketAddress a = SocketAddress::LoopbackV6(0);
  bool ok = bind(fd, a.sockaddr_ptr(), a.sockaddr_len()) == 0;
  close(fd);
  return ok;
}

TEST_F(NioSocketChannelTest, EchoOverIpv6Loopback) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback (::1) on this machine";
  NioServerSocketChannel::ChildSetup setup;
  setup.group = workers_.get();
  setup.initializer = [](NioSocketChannel& child) {
    ASSERT_TRUE(child.pipeline().AddLast("echo", std::make_shared<testing::EchoHandler>()).ok());
  };
  auto server = NioServerSocketChannel::Create(std::move(setup));
  absl::Status bound =
      testing::RegisterAndBind(*bosses_, server, SocketAddress::LoopbackV6(0), kWait);
  ASSERT_TRUE(bound.ok()) << bound;
  EXPECT_TRUE(server->local_address().is_ipv6());
  const uint16_t port = server->local_address().port();
  ASSERT_NE(port, 0);

  auto collector = std::make_shared<Collector>(7);
  auto client = NewClient(collector);
  absl::StatusOr<SocketAddress> target = SocketAddress::Parse(absl::StrCat("[::1]:", port));
  ASSERT_TRUE(target.ok()) << target.status();
  ChannelFuture c = client->Connect(*target);
  ASSERT_TRUE(c.AwaitFor(kWait));
  ASSERT_TRUE(c.IsSuccess()) << c.Cause();
  EXPECT_TRUE(client->remote_address().is_ipv6());
  EXPECT_TRUE(client->local_address().is_ipv6());
  client->WriteAndFlush(Bytes("over v6"));
  ASSERT_TRUE(collector->all_.AwaitFor(kWait));
  EXPECT_EQ(*collector->all_.GetNow(), "over v6");
  ASSERT_TRUE(client->Close().AwaitFor(kWait));
  ASSERT_TRUE(server->Close().AwaitFor(kWait));
}

}  // namespace
}  // namespace gyre
