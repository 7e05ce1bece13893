// Stress: 10,000 TCP connections opened, used and closed against an in-process gyre
// echo server (epoll transport), from several client threads at once. Guards: every
// echo comes back byte-exact; every accepted child channel closes when its peer does;
// no fd is leaked (the /proc/self/fd count is back to its starting value once the
// groups are shut down and gone); no buffer is leaked (the pooled allocator has as many
// live buffers as before).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/stress/stress_util.h"
#include "gyre/testing/nio_test_server.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/testing/budget.h"

namespace gyre {
namespace {

// Echoes and counts its channels' lifecycle events; one instance for every child.
class CountingEcho final : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelActive(ChannelHandlerContext& ctx) override {
    active.Add();
    ctx.FireChannelActive();
  }
  void ChannelInactive(ChannelHandlerContext& ctx) override {
    inactive.Add();
    ctx.FireChannelInactive();
  }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override { ctx.Write(std::move(msg)); }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override { ctx.Flush(); }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override { errors.Add(); }

  stress::Counter active, inactive, errors;
};

TEST(ConnectionsStressTest, TenThousandConnectionsEchoAndLeakNoFd) {
  const long limit = stress::RaiseFdLimit();
  ASSERT_GT(limit, 1024) << "RLIMIT_NOFILE could not be raised";
  const int total = stress::Scaled(10'000, 20'000);  // long: the ephemeral ports bound it
  constexpr int kClientThreads = 4;
  constexpr int kWave = 32;  // connections each client thread holds open at once
  const int fds_at_start = stress::OpenFdCount();
  ASSERT_GT(fds_at_start, 0);
  const int64_t live_at_start = PooledByteBufAllocator::Default()->LiveBuffers();

  auto echo = std::make_shared<CountingEcho>();
  {
    absl::StatusOr<std::unique_ptr<testing::NioTestServer>> server =
        testing::NioTestServer::Start([&](ServerBootstrap& bootstrap) {
          bootstrap.Option(ChannelOption::kSoBacklog, 1024)
              .ChildOption(ChannelOption::kTcpNodelay, true)
              .ChildHandler(echo);
        });
    ASSERT_TRUE(server.ok()) << server.status();
    const uint16_t port = (*server)->port();

    std::atomic<int> next{0};
    std::atomic<int> bad_echoes{0}, failed_connects{0}, done{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < kClientThreads; ++c) {
      clients.emplace_back([&] {
        std::vector<std::pair<int, std::string>> wave;
        for (;;) {
          wave.clear();
          for (int k = 0; k < kWave; ++k) {
            const int id = next.fetch_add(1);
            if (id >= total) break;
            const int fd = stress::ConnectLoopback(port);
            if (fd < 0) {
              failed_connects.fetch_add(1);
              continue;
            }
            std::string msg = testing::PatternBytes(id, 16 + static_cast<size_t>(id % 1500));
            if (!stress::SendAll(fd, msg)) bad_echoes.fetch_add(1);
            wave.emplace_back(fd, std::move(msg));
          }
          if (wave.empty()) return;
          for (auto& [fd, msg] : wave) {
            std::string got;
            if (!stress::RecvExactly(fd, msg.size(), &got) || got != msg) bad_echoes.fetch_add(1);
            close(fd);
            done.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(failed_connects.load(), 0);
    EXPECT_EQ(bad_echoes.load(), 0);
    EXPECT_EQ(done.load() + failed_connects.load(), total);

    // Every child sees its peer's FIN and closes.
    ASSERT_TRUE(echo->inactive.WaitFor(total)) << echo->inactive.value() << " of " << total;
    EXPECT_EQ(echo->active.value(), total);
    EXPECT_EQ(echo->inactive.value(), total);
    EXPECT_EQ(echo->errors.value(), 0);
    ASSERT_NO_FATAL_FAILURE((*server)->Shutdown());
    // Shut down but not yet destroyed: only the loops' own epoll and event fds remain.
    EXPECT_EQ(stress::OpenFdCount(), fds_at_start + 2 * 3);
  }
  EXPECT_EQ(stress::OpenFdCount(), fds_at_start);
  EXPECT_EQ(PooledByteBufAllocator::Default()->LiveBuffers(), live_at_start);
  RecordProperty("connections", total);
}

}  // namespace
}  // namespace gyre
