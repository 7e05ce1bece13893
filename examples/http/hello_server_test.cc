// Drives //examples/http:hello_server (nio and oio) on 127.0.0.1 with a plain socket
// client and checks what it answers, byte for byte where it is fixed.
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/testing/budget.h"
#include "gyre/testing/stream_test_util.h"

extern char** environ;

namespace {

using ::testing::HasSubstr;

std::string ServerPath() {
  const char* dir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(dir ? dir : ".", "/", ws ? ws : "gyre", "/examples/http/hello_server");
}

class Server {
 public:
  explicit Server(const std::string& transport) {
    int out[2];
    if (pipe(out) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    const std::string path = ServerPath();
    std::string t = "--transport=" + transport;
    // oio: --threads caps the connections at once; the test's second connection may
    // arrive before the server has seen the first one close, so no cap there.
    std::string threads = transport == "oio" ? "--threads=0" : "--threads=1";
    std::vector<char*> argv = {const_cast<char*>(path.c_str()), const_cast<char*>("--port=0"),
                               threads.data(), t.data(), nullptr};
    if (posix_spawn(&pid_, path.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    // "listening on 127.0.0.1:PORT (...)"
    std::string line;
    const absl::Time deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(30));
    while (pid_ > 0 && line.find('\n') == std::string::npos && absl::Now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 1000) <= 0) continue;
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    const size_t colon = line.find("127.0.0.1:");
    if (colon != std::string::npos) {
      const std::string rest = line.substr(colon + 10);
      (void)absl::SimpleAtoi(rest.substr(0, rest.find(' ')), &port_);
    }
  }
  ~Server() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // SIGTERM and the exit status.
  int Stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

// A loopback connection to `port` with a 10 s receive timeout, or -1.
int Connect(int port) {
  int fd = gyre::testing::ConnectLoopback(static_cast<uint16_t>(port));
  if (fd < 0) return -1;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

bool SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct Response {
  std::string head;
  std::string body;
};

// Reads `count` responses (Content-Length framed); fewer if the peer closes first.
std::vector<Response> ReadResponses(int fd, int count, bool* eof = nullptr) {
  std::vector<Response> out;
  std::string buf;
  char chunk[4096];
  while (static_cast<int>(out.size()) < count) {
    const size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      Response r;
      r.head = buf.substr(0, end + 2);
      size_t length = 0;
      const size_t cl = r.head.find("Content-Length: ");
      if (cl != std::string::npos) {
        (void)absl::SimpleAtoi(r.head.substr(cl + 16, r.head.find("\r\n", cl) - cl - 16), &length);
      }
      if (buf.size() >= end + 4 + length) {
        r.body = buf.substr(end + 4, length);
        buf.erase(0, end + 4 + length);
        out.push_back(std::move(r));
        continue;
      }
    }
    ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      if (eof != nullptr) *eof = n == 0;
      return out;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  if (eof != nullptr) {
    ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    *eof = n == 0;
  }
  return out;
}

class HelloServerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HelloServerTest, AnswersPlaintextPipelinedAndErrors) {
  Server server(GetParam());
  ASSERT_GT(server.port(), 0) << "hello_server did not report its port";
  const int fd = Connect(server.port());
  ASSERT_GE(fd, 0);

  ASSERT_TRUE(SendAll(fd, "GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::vector<Response> r = ReadResponses(fd, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(r[0].head, "HTTP/1.1 200 OK\r\n")) << r[0].head;
  EXPECT_THAT(r[0].head, HasSubstr("\r\nServer: gyre\r\n"));
  EXPECT_THAT(r[0].head, HasSubstr("\r\nContent-Type: text/plain\r\n"));
  EXPECT_THAT(r[0].head, HasSubstr("\r\nContent-Length: 13\r\n"));
  EXPECT_THAT(r[0].head, HasSubstr(" GMT\r\n"));  // Date
  EXPECT_EQ(r[0].body, "Hello, World!");

  // 16 pipelined requests in one write, "/" and "/plaintext" and a 404 mixed.
  std::string batch;
  for (int i = 0; i < 16; ++i) {
    batch += absl::StrCat("GET ", i % 4 == 3 ? "/nope" : i % 2 ? "/" : "/plaintext",
                          " HTTP/1.1\r\nHost: t\r\n\r\n");
  }
  ASSERT_TRUE(SendAll(fd, batch));
  r = ReadResponses(fd, 16);
  ASSERT_EQ(r.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    if (i % 4 == 3) {
      EXPECT_TRUE(absl::StartsWith(r[i].head, "HTTP/1.1 404 Not Found\r\n")) << i;
    } else {
      EXPECT_EQ(r[i].body, "Hello, World!") << i;
    }
  }

  // A request split across writes.
  ASSERT_TRUE(SendAll(fd, "GET /plain"));
  ASSERT_TRUE(SendAll(fd, "text HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  bool eof = false;
  r = ReadResponses(fd, 1, &eof);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_THAT(r[0].head, HasSubstr("\r\nConnection: close\r\n"));
  std::vector<Response> more = ReadResponses(fd, 1, &eof);
  EXPECT_TRUE(more.empty());
  EXPECT_TRUE(eof) << "the server keeps a Connection: close connection open";
  close(fd);

  // A malformed request: 400 and the connection closes.
  const int bad = Connect(server.port());
  ASSERT_GE(bad, 0);
  ASSERT_TRUE(SendAll(bad, "GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n"));
  r = ReadResponses(bad, 1, &eof);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(r[0].head, "HTTP/1.1 400 Bad Request\r\n")) << r[0].head;
  more = ReadResponses(bad, 1, &eof);
  EXPECT_TRUE(more.empty());
  EXPECT_TRUE(eof);
  close(bad);

  const int status = server.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

INSTANTIATE_TEST_SUITE_P(Transports, HelloServerTest, ::testing::Values("nio", "oio"));

}  // namespace
