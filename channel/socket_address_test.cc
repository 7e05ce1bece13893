#include "gyre/channel/socket_address.h"

#include "gtest/gtest.h"

namespace gyre {
namespace {

TEST(SocketAddressTest, ParsesIpv4AndIpv6) {
  absl::StatusOr<SocketAddress> a = SocketAddress::Parse("127.0.0.1:8080");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->is_ipv4());
  EXPECT_EQ(a->port(), 8080);
  EXPECT_EQ(a->ToString(), "127.0.0.1:8080");
  absl::StatusOr<SocketAddress> b = SocketAddress::Parse("[::1]:0");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->is_ipv6());
  EXPECT_EQ(b->ToString(), "[::1]:0");
  EXPECT_EQ(*a, SocketAddress::Loopback(8080));
  EXPECT_NE(*a, SocketAddress::Loopback(8081));
}

TEST(SocketAddressTest, RejectsBadInput) {
  for (const char* bad : {"", "localhost:80", "1.2.3.4", "1.2.3.4:", "1.2.3.4:99999",
                          "1.2.3.4:-1", "[::1]", "[::1", "::1:80", "1.2.3.4:8x"}) {
    EXPECT_EQ(SocketAddress::Parse(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(SocketAddressTest, EmptyIsUnspecified) {
  SocketAddress e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.ToString(), "unspecified");
  EXPECT_EQ(e.port(), 0);
}

}  // namespace
}  // namespace gyre
