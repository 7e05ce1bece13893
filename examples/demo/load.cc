// A small HTTP load driver for the demo: keep-alive connections to 127.0.0.1:PORT, one
// request in flight per connection, for a fixed time, with a progress line.
//
//   load --port=8080 --connections=8 --duration=4s
//
// Prints a progress line "load: N requests, R req/s, E errors" on stderr while running
// (redrawn in place on a terminal), and the final line "load: N requests in Ts (R req/s)
// over C connections, E errors" on stdout. Exits 1 if no request succeeded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

ABSL_FLAG(int, port, 0, "HTTP port on 127.0.0.1");
ABSL_FLAG(int, connections, 8, "keep-alive connections");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(4), "how long to drive load");

namespace {

std::atomic<uint64_t> g_ok{0};
std::atomic<uint64_t> g_errors{0};

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// One connection: request, read the whole response (headers + Content-Length), repeat.
void Drive(int port, absl::Time until) {
  static const std::string kRequest =
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
  int fd = -1;
  std::string in;
  char buf[4096];
  while (absl::Now() < until) {
    if (fd < 0 && (fd = Connect(port)) < 0) {
      g_errors.fetch_add(1);
      absl::SleepFor(absl::Milliseconds(50));
      continue;
    }
    bool ok = send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) ==
              static_cast<ssize_t>(kRequest.size());
    size_t need = std::string::npos;
    while (ok) {
      size_t head = in.find("\r\n\r\n");
      if (head != std::string::npos && need == std::string::npos) {
        size_t cl = in.find("Content-Length: ");
        size_t len = cl != std::string::npos && cl < head ? std::stoul(in.substr(cl + 16)) : 0;
        need = head + 4 + len;
      }
      if (need != std::string::npos && in.size() >= need) {
        ok = in.compare(0, 12, "HTTP/1.1 200") == 0;
        in.erase(0, need);
        break;
      }
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) ok = false;
      else in.append(buf, static_cast<size_t>(n));
    }
    if (ok) {
      g_ok.fetch_add(1, std::memory_order_relaxed);
    } else {
      g_errors.fetch_add(1, std::memory_order_relaxed);
      close(fd);
      fd = -1;
      in.clear();
    }
  }
  if (fd >= 0) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int port = absl::GetFlag(FLAGS_port);
  const int conns = absl::GetFlag(FLAGS_connections);
  if (port <= 0 || port > 65535 || conns <= 0 || absl::GetFlag(FLAGS_duration) <= absl::ZeroDuration()) {
    std::fprintf(stderr, "load: need --port in 1..65535, --connections > 0, --duration > 0\n");
    return 2;
  }
  const absl::Time start = absl::Now();
  const absl::Time until = start + absl::GetFlag(FLAGS_duration);
  std::vector<std::thread> threads;
  for (int i = 0; i < conns; ++i) threads.emplace_back(Drive, port, until);
  const bool tty = isatty(STDERR_FILENO) == 1;
  while (absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(250));
    double secs = absl::ToDoubleSeconds(absl::Now() - start);
    uint64_t ok = g_ok.load();
    std::fprintf(stderr, tty ? "\r  load: %llu requests, %.0f req/s, %llu errors   "
                    : "  load: %llu requests, %.0f req/s, %llu errors\n",
                static_cast<unsigned long long>(ok), ok / secs,
                static_cast<unsigned long long>(g_errors.load()));
    std::fflush(stderr);
  }
  if (tty) std::fprintf(stderr, "\n");
  for (auto& t : threads) t.join();
  double secs = absl::ToDoubleSeconds(absl::Now() - start);
  uint64_t ok = g_ok.load();
  std::printf("load: %llu requests in %.1fs (%.0f req/s) over %d connections, %llu errors\n",
              static_cast<unsigned long long>(ok), secs, ok / secs, conns,
              static_cast<unsigned long long>(g_errors.load()));
  return ok > 0 ? 0 : 1;
}
