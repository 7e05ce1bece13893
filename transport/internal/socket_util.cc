#include "gyre/transport/internal/socket_util.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <variant>

#include "absl/strings/str_cat.h"

namespace gyre {
namespace internal_transport {

absl::Status ClosedError() { return absl::FailedPreconditionError("channel is closed"); }
absl::Status OutputShutdownError() {
  return absl::FailedPreconditionError("channel output is shut down");
}

absl::Status ErrnoStatus(int err, absl::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", std::strerror(err)));
}

absl::StatusOr<int> OpenTcpSocket(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  return fd;
}

namespace {

absl::Status SetInt(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) return ErrnoStatus(errno, what);
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplySocketOption(int fd, const ChannelOptionSetting& s) {
  auto as_int = [&s]() -> int {
    if (const bool* b = std::get_if<bool>(&s.value)) return *b ? 1 : 0;
    if (const int* i = std::get_if<int>(&s.value)) return *i;
    return 0;
  };
  switch (s.id) {
    case ChannelOptionId::kTcpNodelay:
      return SetInt(fd, IPPROTO_TCP, TCP_NODELAY, as_int(), "setsockopt(TCP_NODELAY)");
    case ChannelOptionId::kSoReuseaddr:
      return SetInt(fd, SOL_SOCKET, SO_REUSEADDR, as_int(), "setsockopt(SO_REUSEADDR)");
    case ChannelOptionId::kSoKeepalive:
      return SetInt(fd, SOL_SOCKET, SO_KEEPALIVE, as_int(), "setsockopt(SO_KEEPALIVE)");
    case ChannelOptionId::kSoRcvbuf:
      return SetInt(fd, SOL_SOCKET, SO_RCVBUF, as_int(), "setsockopt(SO_RCVBUF)");
    case ChannelOptionId::kSoSndbuf:
      return SetInt(fd, SOL_SOCKET, SO_SNDBUF, as_int(), "setsockopt(SO_SNDBUF)");
    case ChannelOptionId::kSoLinger: {
      linger l{};
      int secs = as_int();
      l.l_onoff = secs >= 0 ? 1 : 0;
      l.l_linger = secs >= 0 ? secs : 0;
      if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) != 0) {
        return ErrnoStatus(errno, "setsockopt(SO_LINGER)");
      }
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

namespace {

// The address getsockname / getpeername report for `fd`, or an empty one.
SocketAddress AddressOf(int fd, int (*get)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (get(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return SocketAddress();
  absl::StatusOr<SocketAddress> a = SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  return a.ok() ? *a : SocketAddress();
}

}  // namespace

SocketAddress LocalAddress(int fd) { return AddressOf(fd, &getsockname); }
SocketAddress PeerAddress(int fd) { return AddressOf(fd, &getpeername); }

}  // namespace internal_transport
}  // namespace gyre
