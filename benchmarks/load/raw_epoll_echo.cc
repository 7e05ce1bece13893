// A raw, single-threaded epoll TCP echo server with no framework: the baseline the
// gyre echo server is measured against.
//
//   raw_epoll_echo --host=127.0.0.1 --port=0      # prints the port it listens on
//
// Level-triggered; reads up to 64 KiB per ready socket and writes it straight back,
// keeping what the socket did not take until it is writable (reading pauses then).
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
#include "gyre/channel/socket_address.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "numeric address to bind");
ABSL_FLAG(int, port, 0, "port (0: any free port)");

namespace {

struct Conn {
  std::string pending;  // read, not yet written back
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "raw_epoll_echo: %s: %s\n", what.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<gyre::SocketAddress> addr =
      gyre::SocketAddress::FromHostAndPort(absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port));
  if (!addr.ok()) {
    std::fprintf(stderr, "raw_epoll_echo: %s\n", addr.status().ToString().c_str());
    return 1;
  }
  int lfd = socket(addr->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) return Fail("socket");
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(lfd, addr->sockaddr_ptr(), addr->sockaddr_len()) != 0) return Fail("bind");
  if (listen(lfd, 1024) != 0) return Fail("listen");
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&ss), &len);
  absl::StatusOr<gyre::SocketAddress> bound =
      gyre::SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  std::printf("raw_epoll_echo listening on %s\n", bound.ok() ? bound->ToString().c_str() : "?");
  std::fflush(stdout);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return Fail("epoll_create1");
  epoll_event le{};
  le.events = EPOLLIN;
  le.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &le);
  std::vector<Conn> conns;
  std::vector<char> buf(64 * 1024);
  epoll_event events[256];
  auto set = [ep](int fd, uint32_t ev) {
    epoll_event e{};
    e.events = ev;
    e.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
  };
  auto drop = [&](int fd) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns[static_cast<size_t>(fd)].pending.clear();
  };
  for (;;) {
    int n = epoll_wait(ep, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail("epoll_wait");
    for (int k = 0; k < n; ++k) {
      const int fd = events[k].data.fd;
      if (fd == lfd) {
        for (;;) {
          int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (c < 0) break;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          if (static_cast<size_t>(c) >= conns.size()) conns.resize(static_cast<size_t>(c) + 1);
          epoll_event e{};
          e.events = EPOLLIN;
          e.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &e);
        }
        continue;
      }
      Conn& conn = conns[static_cast<size_t>(fd)];
      if ((events[k].events & EPOLLOUT) != 0) {
        ssize_t w = send(fd, conn.pending.data(), conn.pending.size(), MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
          drop(fd);
          continue;
        }
        if (w > 0) conn.pending.erase(0, static_cast<size_t>(w));
        if (conn.pending.empty()) set(fd, EPOLLIN);
        continue;
      }
      ssize_t r = recv(fd, buf.data(), buf.size(), 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
        drop(fd);
        continue;
      }
      if (r < 0) continue;
      ssize_t w = send(fd, buf.data(), static_cast<size_t>(r), MSG_NOSIGNAL);
      if (w < 0 && errno != EAGAIN && errno != EINTR) {
        drop(fd);
        continue;
      }
      if (w < 0) w = 0;
      if (w < r) {
        conn.pending.assign(buf.data() + w, static_cast<size_t>(r - w));
        set(fd, EPOLLOUT);
      }
    }
  }
}
