#include "gyre/benchmarks/http/http_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gyre::bench::testing {

const std::string* HttpResponse::Header(absl::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (absl::EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

absl::StatusOr<size_t> ParseResponse(absl::string_view data, HttpResponse* out) {
  const size_t head_end = data.find("\r\n\r\n");
  if (head_end == absl::string_view::npos) return 0;
  absl::string_view head = data.substr(0, head_end + 2);
  HttpResponse r;
  size_t eol = head.find("\r\n");
  r.status_line = std::string(head.substr(0, eol));
  head.remove_prefix(eol + 2);
  if (!absl::StartsWith(r.status_line, "HTTP/1.1 ") || r.status_line.size() < 12 ||
      !absl::SimpleAtoi(absl::string_view(r.status_line).substr(9, 3), &r.status)) {
    return absl::InvalidArgumentError(absl::StrCat("bad status line: ", r.status_line));
  }
  size_t length = 0;
  bool have_length = false;
  while (!head.empty()) {
    eol = head.find("\r\n");
    absl::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("bad header line: ", line));
    }
    std::string name(line.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (absl::EqualsIgnoreCase(name, "content-length")) {
      if (!absl::SimpleAtoi(value, &length)) {
        return absl::InvalidArgumentError(absl::StrCat("bad Content-Length: ", value));
      }
      have_length = true;
    }
    r.headers.emplace_back(std::move(name), std::move(value));
  }
  if (!have_length) return absl::InvalidArgumentError("response without Content-Length");
  const size_t total = head_end + 4 + length;
  if (data.size() < total) return 0;
  r.body = std::string(data.substr(head_end + 4, length));
  *out = std::move(r);
  return total;
}

absl::StatusOr<TestConnection> TestConnection::Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  TestConnection conn(fd);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::ErrnoToStatus(errno, "connect");
  }
  return conn;
}

TestConnection::~TestConnection() {
  if (fd_ >= 0) close(fd_);
}

absl::Status TestConnection::WriteAll(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(errno, "send");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status TestConnection::ShutdownWrite() {
  if (shutdown(fd_, SHUT_WR) != 0) return absl::ErrnoToStatus(errno, "shutdown");
  return absl::OkStatus();
}

absl::StatusOr<size_t> TestConnection::ReadSome(absl::Duration timeout, size_t max_bytes) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left_ms < 0) return absl::DeadlineExceededError("no bytes before the deadline");
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left_ms) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return absl::ErrnoToStatus(errno, "poll");
    if (ready == 0) continue;
    char buf[64 * 1024];
    const ssize_t n = recv(fd_, buf, std::min(sizeof(buf), max_bytes), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::ErrnoToStatus(errno, "recv");
    }
    buffered_.append(buf, static_cast<size_t>(n));
    return static_cast<size_t>(n);
  }
}

absl::StatusOr<HttpResponse> TestConnection::RoundTrip(absl::string_view request,
                                                       absl::Duration timeout) {
  absl::Status written = WriteAll(request);
  if (!written.ok()) return written;
  return ReadResponse(timeout);
}

absl::StatusOr<HttpResponse> TestConnection::ReadResponse(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    HttpResponse r;
    absl::StatusOr<size_t> used = ParseResponse(buffered_, &r);
    if (!used.ok()) return used.status();
    if (*used > 0) {
      buffered_.erase(0, *used);
      return r;
    }
    absl::StatusOr<size_t> n = ReadSome(deadline - absl::Now());
    if (!n.ok()) return n.status();
    if (*n == 0) {
      return absl::UnavailableError(
          absl::StrCat("closed with ", buffered_.size(), " bytes of a response buffered"));
    }
  }
}

absl::Status TestConnection::ExpectClosed(absl::Duration timeout) {
  if (!buffered_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("unread bytes: ", buffered_));
  }
  absl::StatusOr<size_t> n = ReadSome(timeout);
  if (!n.ok()) return n.status();
  if (*n != 0) {
    return absl::FailedPreconditionError(absl::StrCat("bytes instead of close: ", buffered_));
  }
  return absl::OkStatus();
}

}  // namespace gyre::bench::testing
