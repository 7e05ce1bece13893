// A TCP echo load client: --connections sockets, each with one --size message
// outstanding; a new one goes as soon as the whole echo is back. One thread, epoll.
//
//   echo_load --host=127.0.0.1 --port=8007 --connections=64 --size=64 --duration=10s
//
// Prints messages/s and the p50/p99 round trip (a JSON line with --json). The first
// --warmup of the run is not counted.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/benchmarks/load/load_stats.h"
#include "gyre/channel/socket_address.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "numeric server address");
ABSL_FLAG(int, port, 8007, "server port");
ABSL_FLAG(int, connections, 64, "concurrent connections");
ABSL_FLAG(int, size, 64, "message size in bytes");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10), "measured time");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1), "time before measuring starts");
ABSL_FLAG(bool, json, false, "print one JSON line");

namespace {

struct Conn {
  int fd = -1;
  size_t sent = 0;      // bytes of the current message written
  size_t received = 0;  // bytes of its echo read
  int64_t started_ns = 0;
  bool want_out = false;
};

int64_t NowNs() { return absl::GetCurrentTimeNanos(); }

int Fail(const std::string& what) {
  std::fprintf(stderr, "echo_load: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n_conn = absl::GetFlag(FLAGS_connections);
  const int size = absl::GetFlag(FLAGS_size);
  const absl::Duration duration = absl::GetFlag(FLAGS_duration);
  const absl::Duration warmup = absl::GetFlag(FLAGS_warmup);
  if (n_conn <= 0 || n_conn > 60000) return Fail("--connections must be 1..60000");
  if (size <= 0 || size > (64 << 20)) return Fail("--size must be 1..64 MiB");
  if (duration <= absl::ZeroDuration()) return Fail("--duration must be positive");
  if (warmup < absl::ZeroDuration()) return Fail("--warmup must be >= 0");
  absl::StatusOr<gyre::SocketAddress> addr =
      gyre::SocketAddress::FromHostAndPort(absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port));
  if (!addr.ok()) return Fail(std::string(addr.status().message()));

  const std::string payload(static_cast<size_t>(size), 'x');
  std::vector<char> sink(static_cast<size_t>(size) + 65536);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return Fail(std::string("epoll_create1: ") + std::strerror(errno));
  std::vector<Conn> conns(static_cast<size_t>(n_conn));
  for (int i = 0; i < n_conn; ++i) {
    int fd = socket(addr->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Fail(std::string("socket: ") + std::strerror(errno));
    if (connect(fd, addr->sockaddr_ptr(), addr->sockaddr_len()) != 0) {
      return Fail("connect " + addr->ToString() + ": " + std::strerror(errno));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    conns[i].fd = fd;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0) return Fail("epoll_ctl");
  }

  gyre::load::LatencyRecorder recorder;
  const int64_t start = NowNs();
  const int64_t measure_from = start + absl::ToInt64Nanoseconds(warmup);
  const int64_t end = measure_from + absl::ToInt64Nanoseconds(duration);

  // Writes what is left of the current message; false on a broken connection.
  auto send_rest = [&](int i) -> bool {
    Conn& c = conns[i];
    while (c.sent < payload.size()) {
      ssize_t n = send(c.fd, payload.data() + c.sent, payload.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.want_out) {
          epoll_event e{};
          e.events = EPOLLIN | EPOLLOUT;
          e.data.u32 = static_cast<uint32_t>(i);
          epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &e);
          c.want_out = true;
        }
        return true;
      }
      return false;
    }
    if (c.want_out) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u32 = static_cast<uint32_t>(i);
      epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &e);
      c.want_out = false;
    }
    return true;
  };
  auto start_message = [&](int i, int64_t now) -> bool {
    conns[i].sent = 0;
    conns[i].received = 0;
    conns[i].started_ns = now;
    return send_rest(i);
  };

  for (int i = 0; i < n_conn; ++i) {
    if (!start_message(i, NowNs())) return Fail("send failed");
  }
  std::vector<epoll_event> events(static_cast<size_t>(n_conn));
  int64_t now = NowNs();
  while (now < end) {
    int ready = epoll_wait(ep, events.data(), n_conn, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Fail(std::string("epoll_wait: ") + std::strerror(errno));
    now = NowNs();
    for (int k = 0; k < ready; ++k) {
      const int i = static_cast<int>(events[k].data.u32);
      Conn& c = conns[i];
      if ((events[k].events & EPOLLOUT) != 0 && !send_rest(i)) return Fail("send failed");
      if ((events[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) == 0) continue;
      for (;;) {
        ssize_t n = recv(c.fd, sink.data(), sink.size(), 0);
        if (n > 0) {
          c.received += static_cast<size_t>(n);
          if (c.received > payload.size()) return Fail("more bytes came back than were sent");
          if (c.received == payload.size()) {
            if (c.started_ns >= measure_from && now <= end) {
              recorder.Add(absl::Nanoseconds(now - c.started_ns));
            }
            if (!start_message(i, now)) return Fail("send failed");
          }
          if (static_cast<size_t>(n) < sink.size()) break;
          continue;
        }
        if (n == 0) return Fail("server closed a connection");
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return Fail(std::string("recv: ") + std::strerror(errno));
      }
    }
  }
  gyre::load::LatencySummary s = recorder.Summarize(duration);
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", gyre::load::SummaryJson(s, n_conn, size).c_str());
  } else {
    std::printf("%d connections, %d B: %.0f msg/s, p50 %.1f us, p99 %.1f us, max %.1f us\n",
                n_conn, size, s.per_second, absl::ToDoubleMicroseconds(s.p50),
                absl::ToDoubleMicroseconds(s.p99), absl::ToDoubleMicroseconds(s.max));
  }
  for (Conn& c : conns) close(c.fd);
  close(ep);
  return 0;
}
