// Tests of the raw_epoll_http binary as the benchmark scripts run it: a child process
// on an ephemeral port, its port read from stdout, stopped by a signal.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/benchmarks/http/http_test_client.h"
#include "gyre/testing/budget.h"

extern char** environ;

namespace gyre::bench {
namespace {

using testing::HttpResponse;
using testing::TestConnection;

const absl::Duration kTimeout = gyre::testing::Scaled(absl::Seconds(30));

std::string BinaryPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || workspace == nullptr) return "benchmarks/http/raw_epoll_http";
  return absl::StrCat(srcdir, "/", workspace, "/benchmarks/http/raw_epoll_http");
}

// The server as a child process; its stdout and stderr are pipes read with deadlines.
class Child {
 public:
  explicit Child(std::vector<std::string> args) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) std::abort();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    const std::string path = BinaryPath();
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(path.c_str()));
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    spawn_error_ = posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
  }

  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(out_fd_);
    close(err_fd_);
  }

  int spawn_error() const { return spawn_error_; }

  // Reads stdout until a full line arrived (or end of file, or the deadline).
  std::string ReadLine(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (out_.find('\n') == std::string::npos) {
      if (!ReadInto(out_fd_, &out_, deadline)) break;
    }
    const size_t eol = out_.find('\n');
    std::string line = out_.substr(0, eol);
    out_.erase(0, eol == std::string::npos ? out_.size() : eol + 1);
    return line;
  }

  // Waits until the child exits (its output pipes reach end of file, then waitpid) and
  // returns its wait status, or -1 at the deadline.
  int Wait(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (ReadInto(out_fd_, &out_, deadline)) {
    }
    while (ReadInto(err_fd_, &err_, deadline)) {
    }
    if (absl::Now() >= deadline) return -1;
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    return status;
  }

  const std::string& err() const { return err_; }
  pid_t pid() const { return pid_; }

 private:
  // Appends what `fd` has; false at end of file, on error or at the deadline.
  static bool ReadInto(int fd, std::string* to, absl::Time deadline) {
    for (;;) {
      const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (left_ms < 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(left_ms) + 1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return false;
      if (ready == 0) continue;  // the deadline check above ends the wait
      char buf[4096];
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      to->append(buf, static_cast<size_t>(n));
      return true;
    }
  }

  pid_t pid_ = -1;
  int spawn_error_ = 0;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool reaped_ = false;
  std::string out_;
  std::string err_;
};

// Parses "listening on 127.0.0.1:PORT"; 0 when the line is not that.
int PortOf(const std::string& line) {
  constexpr absl::string_view kPrefix = "listening on 127.0.0.1:";
  int port = 0;
  if (line.rfind(kPrefix.data(), 0) != 0 ||
      !absl::SimpleAtoi(absl::string_view(line).substr(kPrefix.size()), &port)) {
    return 0;
  }
  return port;
}

void ExpectServes(int port) {
  absl::StatusOr<TestConnection> c = TestConnection::Connect(port);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->WriteAll("GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n").ok());
  absl::StatusOr<HttpResponse> r = c->ReadResponse(kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(r->body, "Hello, World!");
}

void RunUntilSignal(int sig, std::vector<std::string> args) {
  Child child(std::move(args));
  ASSERT_EQ(child.spawn_error(), 0) << BinaryPath();
  const std::string line = child.ReadLine(kTimeout);
  const int port = PortOf(line);
  ASSERT_GT(port, 0) << "first line: \"" << line << "\"";
  ExpectServes(port);
  // An idle keep-alive connection must not hold the exit up.
  absl::StatusOr<TestConnection> idle = TestConnection::Connect(port);
  ASSERT_TRUE(idle.ok()) << idle.status();
  ASSERT_EQ(kill(child.pid(), sig), 0);
  const int status = child.Wait(kTimeout);
  ASSERT_NE(status, -1) << "did not exit after signal " << sig;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "wait status " << status << "; stderr: " << child.err();
  EXPECT_TRUE(idle->ExpectClosed(kTimeout).ok());
}

TEST(RawEpollHttpBinaryTest, PrintsPortServesAndExitsZeroOnSigterm) {
  RunUntilSignal(SIGTERM, {"--port=0"});
}

TEST(RawEpollHttpBinaryTest, TwoThreadsExitZeroOnSigint) {
  RunUntilSignal(SIGINT, {"--port=0", "--threads=2", "--host=127.0.0.1"});
}

// Runs the binary with `args` and expects it to exit 1 with `word` in its stderr.
void ExpectRejected(std::vector<std::string> args, const std::string& word) {
  Child child(std::move(args));
  ASSERT_EQ(child.spawn_error(), 0) << BinaryPath();
  const int status = child.Wait(kTimeout);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(child.err().find(word), std::string::npos) << child.err();
}

TEST(RawEpollHttpBinaryTest, BadFlagsExitNonZeroWithAMessage) {
  ExpectRejected({"--port=0", "--threads=0"}, "threads");
}

TEST(RawEpollHttpBinaryTest, NonNumericHostIsRejected) {
  ExpectRejected({"--port=0", "--host=not-an-address"}, "not-an-address");
}

}  // namespace
}  // namespace gyre::bench
