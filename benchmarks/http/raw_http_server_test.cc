#include "gyre/benchmarks/http/raw_http_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "gtest/gtest.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "gyre/benchmarks/http/http_test_client.h"
#include "gyre/testing/budget.h"

namespace gyre::bench {
namespace {

using testing::HttpResponse;
using testing::TestConnection;

const absl::Duration kTimeout = gyre::testing::Scaled(absl::Seconds(30));
constexpr absl::string_view kGet = "GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n";

class RawHttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(1); }

  void Start(int threads, int send_buffer_bytes = 0) {
    server_.reset();
    RawHttpServerOptions options;
    options.port = 0;
    options.threads = threads;
    options.send_buffer_bytes = send_buffer_bytes;
    absl::StatusOr<std::unique_ptr<RawHttpServer>> s = RawHttpServer::Create(options);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_GT(server_->port(), 0);
  }

  TestConnection Connect() {
    absl::StatusOr<TestConnection> c = TestConnection::Connect(server_->port());
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) std::abort();
    return *std::move(c);
  }

  static void ExpectHello(const HttpResponse& r) {
    EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
    EXPECT_EQ(r.body, "Hello, World!");
  }

  // Reads the next response on `c` and expects it to be the plaintext hello.
  static void ReadHello(TestConnection& c) {
    absl::StatusOr<HttpResponse> r = c.ReadResponse(kTimeout);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectHello(*r);
  }

  // Reads the next response on `c`, expects it to have `status`, and then the server to
  // close the connection.
  static void ExpectStatusThenClosed(TestConnection& c, int status) {
    absl::StatusOr<HttpResponse> r = c.ReadResponse(kTimeout);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status, status);
    EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
  }

  std::unique_ptr<RawHttpServer> server_;
};

TEST_F(RawHttpServerTest, AddressNamesTheBoundPort) {
  EXPECT_EQ(server_->address(), absl::StrCat("127.0.0.1:", server_->port()));
}

TEST_F(RawHttpServerTest, PlaintextResponseBytes) {
  TestConnection c = Connect();
  absl::StatusOr<HttpResponse> r = c.RoundTrip(kGet, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string* date = r->Header("Date");
  ASSERT_NE(date, nullptr);
  // The exact bytes: status line, the four headers, the body, nothing else.
  const std::string expected = absl::StrCat(
      "HTTP/1.1 200 OK\r\nServer: gyre-raw\r\nContent-Type: text/plain\r\n"
      "Content-Length: 13\r\nDate: ",
      *date, "\r\n\r\nHello, World!");
  EXPECT_EQ(r->headers.size(), 4u);
  EXPECT_EQ(*r->Header("Server"), "gyre-raw");
  EXPECT_EQ(*r->Header("Content-Type"), "text/plain");
  EXPECT_EQ(*r->Header("Content-Length"), "13");
  ExpectHello(*r);
  ASSERT_TRUE(c.WriteAll(kGet).ok());
  ASSERT_TRUE(c.ReadSome(kTimeout).ok());
  while (c.buffered().size() < expected.size()) ASSERT_TRUE(c.ReadSome(kTimeout).ok());
  // The next response may carry the next second's date; compare its shape.
  EXPECT_EQ(c.buffered().size(), expected.size());
  EXPECT_EQ(c.buffered().substr(0, 80), expected.substr(0, 80));
  EXPECT_EQ(c.buffered().substr(c.buffered().size() - 17), "\r\n\r\nHello, World!");

  // IMF-fixdate (RFC 7231 7.1.1.1), close to now.
  ASSERT_EQ(date->size(), 29u) << *date;
  struct tm tm = {};
  const char* end = strptime(date->c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  ASSERT_NE(end, nullptr) << *date;
  EXPECT_EQ(*end, '\0');
  const time_t sent = timegm(&tm);
  EXPECT_LE(std::llabs(static_cast<long long>(sent - time(nullptr))), 60) << *date;
}

TEST_F(RawHttpServerTest, RootIsPlaintextToo) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll("GET / HTTP/1.1\r\n\r\n").ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
}

TEST_F(RawHttpServerTest, KeepAliveServesThreeRequestsOnOneConnection) {
  TestConnection c = Connect();
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<HttpResponse> r = c.RoundTrip(kGet, kTimeout);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    ExpectHello(*r);
    EXPECT_EQ(r->Header("Connection"), nullptr);
  }
  EXPECT_TRUE(c.buffered().empty());
}

TEST_F(RawHttpServerTest, SixteenPipelinedRequestsAreAnsweredInOrder) {
  // Alternate found and not-found paths so that order is visible in the statuses.
  std::string burst;
  for (int i = 0; i < 16; ++i) {
    absl::StrAppend(&burst, i % 3 == 0 ? "GET /missing/" : "GET /plaintext?n=", i,
                    " HTTP/1.1\r\nHost: t\r\n\r\n");
  }
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll(burst).ok());  // one write
  for (int i = 0; i < 16; ++i) {
    absl::StatusOr<HttpResponse> r = c.ReadResponse(kTimeout);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
    if (i % 3 == 0) {
      EXPECT_EQ(r->status, 404) << i;
    } else {
      ExpectHello(*r);
    }
  }
  EXPECT_TRUE(c.buffered().empty());
}

TEST_F(RawHttpServerTest, RequestSplitByteByByte) {
  TestConnection c = Connect();
  const std::string request =
      "GET /plaintext HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bytewise\r\n\r\n";
  for (char ch : request) ASSERT_TRUE(c.WriteAll(absl::string_view(&ch, 1)).ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
  // Still keep-alive, and a whole request afterwards is answered normally.
  ASSERT_TRUE(c.WriteAll(kGet).ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
}

TEST_F(RawHttpServerTest, OtherPathIsNotFoundAndKeepsTheConnection) {
  TestConnection c = Connect();
  absl::StatusOr<HttpResponse> r = c.RoundTrip("GET /plaintext/more HTTP/1.1\r\n\r\n", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status_line, "HTTP/1.1 404 Not Found");
  EXPECT_EQ(r->body, "Not Found\n");
  EXPECT_EQ(*r->Header("Server"), "gyre-raw");
  ASSERT_NE(r->Header("Date"), nullptr);
  ASSERT_TRUE(c.WriteAll(kGet).ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
}

TEST_F(RawHttpServerTest, HeadHasNoBody) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll("HEAD /plaintext HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n").ok());
  // Our parser would take the GET's bytes as the HEAD's body; read the head by hand.
  while (c.buffered().find("\r\n\r\n") == std::string::npos) {
    ASSERT_TRUE(c.ReadSome(kTimeout).ok());
  }
  const size_t head_end = c.buffered().find("\r\n\r\n") + 4;
  EXPECT_EQ(c.buffered().substr(0, 17), "HTTP/1.1 200 OK\r\n");
  EXPECT_NE(c.buffered().find("Content-Length: 13\r\n"), std::string::npos);
  c.buffered().erase(0, head_end);
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));  // the GET's response follows the HEAD's head directly
}

TEST_F(RawHttpServerTest, OtherMethodIsNotAllowed) {
  TestConnection c = Connect();
  absl::StatusOr<HttpResponse> r = c.RoundTrip("DELETE /plaintext HTTP/1.1\r\n\r\n", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 405);
  ASSERT_NE(r->Header("Allow"), nullptr);
  EXPECT_EQ(*r->Header("Allow"), "GET, HEAD");
}

TEST_F(RawHttpServerTest, RequestBodyIsSkipped) {
  TestConnection c = Connect();
  // A body that would be a request (or garbage) if it were parsed, split over writes.
  ASSERT_TRUE(c.WriteAll("POST /plaintext HTTP/1.1\r\nContent-Length: 25\r\n\r\nGET /x HT").ok());
  ASSERT_TRUE(c.WriteAll("TP/1.1\r\n\r\n\x01\x02\x03\x04\x05\x06").ok());
  absl::StatusOr<HttpResponse> r = c.RoundTrip(kGet, kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 405);
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
}

TEST_F(RawHttpServerTest, ConnectionCloseClosesAfterTheResponse) {
  TestConnection c = Connect();
  absl::StatusOr<HttpResponse> r =
      c.RoundTrip("GET /plaintext HTTP/1.1\r\nConnection: close\r\n\r\n", kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectHello(*r);
  ASSERT_NE(r->Header("Connection"), nullptr);
  EXPECT_EQ(*r->Header("Connection"), "close");
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, PipelinedRequestsAfterConnectionCloseAreNotAnswered) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll(absl::StrCat(kGet, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", kGet,
                                      kGet))
                  .ok());
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    ASSERT_NO_FATAL_FAILURE(ReadHello(c));
  }
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, Http10ClosesAfterTheResponse) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll("GET /plaintext HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, MalformedRequestGets400AndClose) {
  TestConnection c = Connect();
  absl::StatusOr<HttpResponse> r =
      c.RoundTrip(absl::StrCat(kGet, "NOT HTTP\r\n\r\n", kGet), kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectHello(*r);  // what came before the bad request is answered
  r = c.ReadResponse(kTimeout);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status_line, "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(*r->Header("Connection"), "close");
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, TransferEncodingGets501AndClose) {
  TestConnection c = Connect();
  ASSERT_TRUE(
      c.WriteAll("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
          .ok());
  ASSERT_NO_FATAL_FAILURE(ExpectStatusThenClosed(c, 501));
}

TEST_F(RawHttpServerTest, OversizedHeadGets400AndClose) {
  TestConnection c = Connect();
  std::string head = "GET / HTTP/1.1\r\nX-Big: ";
  head.append(RawHttpServer::kMaxHeadSize, 'a');  // never terminated
  ASSERT_TRUE(c.WriteAll(head).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectStatusThenClosed(c, 400));
}

TEST_F(RawHttpServerTest, HalfClosedClientStillGetsItsResponses) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll(absl::StrCat(kGet, kGet)).ok());
  ASSERT_TRUE(c.ShutdownWrite().ok());
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    ASSERT_NO_FATAL_FAILURE(ReadHello(c));
  }
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, ProbeConnectionThatClosesAtOnceIsHarmless) {
  // What tools/bench/net.py does to learn that the server listens.
  { TestConnection probe = Connect(); }
  TestConnection c = Connect();
  ASSERT_TRUE(c.WriteAll(kGet).ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
}

// A client pipelining 1 MiB of requests while reading slowly through a small receive
// buffer: the server must fill the socket, wait for EPOLLOUT, and lose nothing.
TEST_F(RawHttpServerTest, SlowReaderOfAOneMebibytePipelinedBurstLosesNothing) {
  Start(1, /*send_buffer_bytes=*/32 * 1024);  // so the socket refuses writes at times
  TestConnection c = Connect();
  const int small = 64 * 1024;
  ASSERT_EQ(setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  std::string burst;
  size_t requests = 0;
  while (burst.size() < 1024 * 1024) {
    burst.append(kGet.data(), kGet.size());
    ++requests;
  }
  size_t written = 0;
  size_t answered = 0;
  const absl::Time deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(120));
  while (answered < requests) {
    ASSERT_LT(absl::Now(), deadline) << answered << " of " << requests << " answered";
    pollfd p{c.fd(), static_cast<short>(POLLIN | (written < burst.size() ? POLLOUT : 0)), 0};
    ASSERT_GE(poll(&p, 1, 1000), 0);
    if ((p.revents & POLLOUT) != 0) {
      const ssize_t n = send(c.fd(), burst.data() + written,
                             std::min<size_t>(burst.size() - written, 16 * 1024),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) written += static_cast<size_t>(n);
      ASSERT_TRUE(n > 0 || errno == EAGAIN) << std::strerror(errno);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      absl::StatusOr<size_t> n = c.ReadSome(kTimeout, 1024);  // slow: 1 KiB at a time
      ASSERT_TRUE(n.ok()) << n.status();
      ASSERT_GT(*n, 0u) << "closed after " << answered << " responses";
      for (;;) {
        HttpResponse r;
        absl::StatusOr<size_t> used = testing::ParseResponse(c.buffered(), &r);
        ASSERT_TRUE(used.ok()) << used.status();
        if (*used == 0) break;
        c.buffered().erase(0, *used);
        ASSERT_EQ(r.status, 200) << answered;
        ASSERT_EQ(r.body, "Hello, World!") << answered;
        ++answered;
      }
    }
  }
  EXPECT_EQ(answered, requests);
  EXPECT_TRUE(c.buffered().empty());
  EXPECT_GT(server_->PartialWritesForTesting(), 0u) << "the EPOLLOUT path never ran";
  // The connection is still in order afterwards.
  ASSERT_TRUE(c.WriteAll("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").ok());
  ASSERT_NO_FATAL_FAILURE(ReadHello(c));
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
}

TEST_F(RawHttpServerTest, ManyConnectionsOnSeveralThreads) {
  Start(4);
  std::vector<TestConnection> conns;
  for (int i = 0; i < 32; ++i) conns.push_back(Connect());
  for (int round = 0; round < 2; ++round) {
    for (TestConnection& c : conns) ASSERT_TRUE(c.WriteAll(absl::StrCat(kGet, kGet)).ok());
    for (TestConnection& c : conns) {
      for (int k = 0; k < 2; ++k) {
        ASSERT_NO_FATAL_FAILURE(ReadHello(c));
      }
    }
  }
}

TEST_F(RawHttpServerTest, ShutdownClosesOpenConnections) {
  TestConnection c = Connect();
  ASSERT_TRUE(c.RoundTrip(kGet, kTimeout).ok());
  server_->Shutdown();
  EXPECT_TRUE(c.ExpectClosed(kTimeout).ok());
  server_->Shutdown();  // idempotent
}

TEST(RawHttpServerCreateTest, RejectsBadOptions) {
  RawHttpServerOptions options;
  options.host = "localhost";  // not numeric
  EXPECT_EQ(RawHttpServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.host = "127.0.0.1";
  options.port = 70000;
  EXPECT_EQ(RawHttpServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.port = 0;
  options.threads = 0;
  EXPECT_EQ(RawHttpServer::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RawHttpServerCreateTest, PortInUseIsAnError) {
  absl::StatusOr<std::unique_ptr<RawHttpServer>> a = RawHttpServer::Create({});
  ASSERT_TRUE(a.ok()) << a.status();
  RawHttpServerOptions options;
  options.port = (*a)->port();
  absl::StatusOr<std::unique_ptr<RawHttpServer>> b = RawHttpServer::Create(options);
  EXPECT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("bind"), absl::string_view::npos) << b.status();
}

TEST(RawHttpServerCreateTest, Ipv6Loopback) {
  RawHttpServerOptions options;
  options.host = "::1";
  absl::StatusOr<std::unique_ptr<RawHttpServer>> s = RawHttpServer::Create(options);
  if (!s.ok() && s.status().code() != absl::StatusCode::kInvalidArgument) {
    GTEST_SKIP() << "no IPv6 loopback here: " << s.status();
  }
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->address(), absl::StrCat("[::1]:", (*s)->port()));
}

// Steady state: once a connection's buffers exist, requests allocate nothing. The
// client side of this test allocates nothing while measuring either.
TEST_F(RawHttpServerTest, SteadyStateAllocatesNothing) {
  {
    const uint64_t before = TotalAllocations();
    auto probe = std::make_unique<std::string>(100, 'x');
    benchmark::DoNotOptimize(probe.get());
    if (TotalAllocations() == before) GTEST_SKIP() << "operator new is not counted here";
  }
  TestConnection c = Connect();
  std::string burst;
  for (int i = 0; i < 16; ++i) burst.append(kGet.data(), kGet.size());
  // Warm up: buffers grow to their working size; learn the size of 16 responses.
  ASSERT_TRUE(c.WriteAll(burst).ok());
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(c.ReadResponse(kTimeout).ok());
  ASSERT_TRUE(c.buffered().empty());
  absl::StatusOr<HttpResponse> one = c.RoundTrip(kGet, kTimeout);
  ASSERT_TRUE(one.ok()) << one.status();
  // Every 200 has the same length (the Date value has a fixed width).
  const size_t response_size =
      absl::StrCat("HTTP/1.1 200 OK\r\nServer: gyre-raw\r\nContent-Type: text/plain\r\n"
                   "Content-Length: 13\r\nDate: ",
                   *one->Header("Date"), "\r\n\r\nHello, World!")
          .size();

  char buf[64 * 1024];
  const uint64_t before = TotalAllocations();
  for (int round = 0; round < 200; ++round) {
    ASSERT_TRUE(c.WriteAll(burst).ok());
    size_t got = 0;
    while (got < 16 * response_size) {
      pollfd p{c.fd(), POLLIN, 0};
      ASSERT_EQ(poll(&p, 1, 30000), 1);
      const ssize_t n = recv(c.fd(), buf, sizeof(buf), 0);
      ASSERT_GT(n, 0);
      got += static_cast<size_t>(n);
    }
    ASSERT_EQ(got, 16 * response_size);
  }
  EXPECT_EQ(TotalAllocations() - before, 0u);
}

}  // namespace
}  // namespace gyre::bench
