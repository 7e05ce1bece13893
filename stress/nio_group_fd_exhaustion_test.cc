// Fault injection, alone in its binary (it uses up the process's fd table): creating a
// NioEventLoopGroup when only enough fds for k loops are left. Child k's epoll_create1
// or eventfd fails with EMFILE; Create returns that as a status (ResourceExhausted);
// children 0..k-1 are destroyed and their fds closed (the /proc/self/fd count is back
// where it was); no thread was started; a group can be created once fds are free again.
// Accept under EMFILE is //transport/nio:nio_accept_backoff_test.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "gyre/stress/stress_util.h"
#include "gyre/transport/nio/nio_event_loop_group.h"

namespace gyre {
namespace {

// Fills the fd table (under a lowered soft limit) and gives fds back on request;
// restores everything however the test ends.
class FdFiller {
 public:
  FdFiller() {
    getrlimit(RLIMIT_NOFILE, &old_);
    rlimit low = old_;
    low.rlim_cur = 512;
    setrlimit(RLIMIT_NOFILE, &low);
    for (;;) {
      int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      fds_.push_back(fd);
    }
  }
  ~FdFiller() {
    for (int fd : fds_) close(fd);
    setrlimit(RLIMIT_NOFILE, &old_);
  }
  // Closes `n` of the filler fds, so exactly that many are free.
  void Free(int n) {
    for (int i = 0; i < n && !fds_.empty(); ++i) {
      close(fds_.back());
      fds_.pop_back();
    }
  }
  size_t filled() const { return fds_.size(); }

 private:
  rlimit old_{};
  std::vector<int> fds_;
};

class NioGroupFdExhaustionTest : public ::testing::TestWithParam<int> {};

// Each loop needs two fds (epoll and eventfd). GetParam() extra fds: 0 makes child k's
// epoll_create1 fail, 1 makes its eventfd fail (after its epoll fd was made).
TEST_P(NioGroupFdExhaustionTest, ChildKFailsCleanly) {
  if (std::getenv("GYRE_UBSAN") != nullptr) {
    GTEST_SKIP() << "fd exhaustion breaks UBSan's vptr probe";
  }
  constexpr int kLoops = 4;
  constexpr int kFailAt = 2;  // children 0 and 1 are made, child 2 fails
  const int fds_before = stress::OpenFdCount();
  ASSERT_GT(fds_before, 0);
  {
    FdFiller filler;
    ASSERT_GT(filler.filled(), 2u * kFailAt + 1);
    filler.Free(2 * kFailAt + GetParam());
    absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> group = NioEventLoopGroup::Create(kLoops);
    ASSERT_FALSE(group.ok());
    EXPECT_EQ(group.status().code(), absl::StatusCode::kResourceExhausted) << group.status();
    EXPECT_NE(group.status().message().find(GetParam() == 0 ? "epoll_create1" : "eventfd"),
              std::string::npos)
        << group.status();
    // Everything the failed Create opened is closed again: all the freed fds are free.
    std::vector<int> probe;
    for (int i = 0; i < 2 * kFailAt + GetParam(); ++i) {
      int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      EXPECT_GE(fd, 0) << "fd " << i << " of the freed ones is still taken";
      if (fd >= 0) probe.push_back(fd);
    }
    for (int fd : probe) close(fd);
  }
  EXPECT_EQ(stress::OpenFdCount(), fds_before);
  // With fds available again, the same Create succeeds.
  absl::StatusOr<std::unique_ptr<NioEventLoopGroup>> group = NioEventLoopGroup::Create(kLoops);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(stress::OpenFdCount(), fds_before + 2 * kLoops);
  group->reset();
  EXPECT_EQ(stress::OpenFdCount(), fds_before);
}

INSTANTIATE_TEST_SUITE_P(EpollOrEventfd, NioGroupFdExhaustionTest, ::testing::Values(0, 1));

}  // namespace
}  // namespace gyre
