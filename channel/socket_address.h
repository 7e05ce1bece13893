// SocketAddress: an IPv4 or IPv6 address and port (a sockaddr_storage, by value).
//
//   absl::StatusOr<SocketAddress> a = SocketAddress::Parse("127.0.0.1:8080");
//   absl::StatusOr<SocketAddress> b = SocketAddress::Parse("[::1]:0");
//   SocketAddress any = SocketAddress::Loopback(0);     // 127.0.0.1, ephemeral port
//
// Parse accepts numeric hosts only (no name resolution: it never blocks).
//
// Thread safety: thread-compatible value type.
#ifndef GYRE_CHANNEL_SOCKET_ADDRESS_H_
#define GYRE_CHANNEL_SOCKET_ADDRESS_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gyre {

class SocketAddress {
 public:
  // An empty (unspecified) address; family() is AF_UNSPEC.
  SocketAddress();

  // Parses "a.b.c.d:port", "[v6]:port" or "v6" forms with a numeric host. Returns
  // InvalidArgument for anything else (a name, a bad port, a missing port).
  static absl::StatusOr<SocketAddress> Parse(absl::string_view host_port);
  static absl::StatusOr<SocketAddress> FromHostAndPort(absl::string_view host, int port);
  // 127.0.0.1:port, [::1]:port, 0.0.0.0:port.
  static SocketAddress Loopback(uint16_t port);
  static SocketAddress LoopbackV6(uint16_t port);
  static SocketAddress AnyV4(uint16_t port);
  // From a kernel-filled sockaddr; InvalidArgument for families other than IPv4/IPv6.
  static absl::StatusOr<SocketAddress> FromSockaddr(const sockaddr* addr, socklen_t len);

  int family() const { return storage_.ss_family; }
  bool is_ipv4() const { return family() == AF_INET; }
  bool is_ipv6() const { return family() == AF_INET6; }
  bool empty() const { return family() == AF_UNSPEC; }
  uint16_t port() const;
  std::string host() const;
  // "1.2.3.4:80" or "[::1]:80"; "unspecified" when empty.
  std::string ToString() const;

  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t sockaddr_len() const;

  friend bool operator==(const SocketAddress& a, const SocketAddress& b);
  friend bool operator!=(const SocketAddress& a, const SocketAddress& b) { return !(a == b); }

 private:
  sockaddr_storage storage_;
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_SOCKET_ADDRESS_H_
