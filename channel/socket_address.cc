#include "gyre/channel/socket_address.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gyre {

SocketAddress::SocketAddress() {
  std::memset(&storage_, 0, sizeof(storage_));
  storage_.ss_family = AF_UNSPEC;
}

absl::StatusOr<SocketAddress> SocketAddress::FromHostAndPort(absl::string_view host, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port out of range: ", port));
  }
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  SocketAddress out;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage_);
  if (inet_pton(AF_INET, h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    return out;
  }
  std::memset(&out.storage_, 0, sizeof(out.storage_));
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage_);
  if (inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("not a numeric IPv4 or IPv6 address: '", host, "'"));
}

absl::StatusOr<SocketAddress> SocketAddress::Parse(absl::string_view host_port) {
  absl::string_view host, port;
  if (!host_port.empty() && host_port.front() == '[') {
    size_t close = host_port.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("missing ']' in '", host_port, "'"));
    }
    host = host_port.substr(0, close + 1);
    absl::string_view rest = host_port.substr(close + 1);
    if (rest.size() < 2 || rest.front() != ':') {
      return absl::InvalidArgumentError(absl::StrCat("missing port in '", host_port, "'"));
    }
    port = rest.substr(1);
  } else {
    size_t colon = host_port.rfind(':');
    if (colon == absl::string_view::npos || host_port.find(':') != colon) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected HOST:PORT or [V6]:PORT, got '", host_port, "'"));
    }
    host = host_port.substr(0, colon);
    port = host_port.substr(colon + 1);
  }
  int p = 0;
  if (port.empty() || !absl::SimpleAtoi(port, &p)) {
    return absl::InvalidArgumentError(absl::StrCat("bad port in '", host_port, "'"));
  }
  return FromHostAndPort(host, p);
}

SocketAddress SocketAddress::Loopback(uint16_t port) { return *FromHostAndPort("127.0.0.1", port); }
SocketAddress SocketAddress::LoopbackV6(uint16_t port) { return *FromHostAndPort("::1", port); }
SocketAddress SocketAddress::AnyV4(uint16_t port) { return *FromHostAndPort("0.0.0.0", port); }

absl::StatusOr<SocketAddress> SocketAddress::FromSockaddr(const sockaddr* addr, socklen_t len) {
  SocketAddress out;
  if (addr == nullptr) return absl::InvalidArgumentError("null sockaddr");
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&out.storage_, addr, sizeof(sockaddr_in));
    return out;
  }
  if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&out.storage_, addr, sizeof(sockaddr_in6));
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat("unsupported address family ", addr->sa_family));
}

uint16_t SocketAddress::port() const {
  if (is_ipv4()) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (is_ipv6()) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

std::string SocketAddress::host() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (is_ipv4()) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof(buf));
  } else if (is_ipv6()) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf,
              sizeof(buf));
  }
  return buf;
}

std::string SocketAddress::ToString() const {
  if (is_ipv4()) return absl::StrCat(host(), ":", port());
  if (is_ipv6()) return absl::StrCat("[", host(), "]:", port());
  return "unspecified";
}

socklen_t SocketAddress::sockaddr_len() const {
  if (is_ipv4()) return sizeof(sockaddr_in);
  if (is_ipv6()) return sizeof(sockaddr_in6);
  return sizeof(sockaddr_storage);
}

bool operator==(const SocketAddress& a, const SocketAddress& b) {
  if (a.family() != b.family()) return false;
  return std::memcmp(&a.storage_, &b.storage_, a.sockaddr_len()) == 0;
}

}  // namespace gyre
