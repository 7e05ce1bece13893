// Test-side HTTP/1.1 client pieces for the raw epoll HTTP server's tests: a blocking
// loopback connection whose reads all take a deadline, and a response parser written
// independently of the server's code.
//
//   TestConnection conn = TestConnection::Connect(port).value();
//   ASSERT_TRUE(conn.WriteAll("GET / HTTP/1.1\r\n\r\n").ok());
//   absl::StatusOr<HttpResponse> r = conn.ReadResponse(absl::Seconds(10));
//
// Thread safety: thread-compatible. Ownership: TestConnection owns its socket.
#ifndef GYRE_BENCHMARKS_HTTP_HTTP_TEST_CLIENT_H_
#define GYRE_BENCHMARKS_HTTP_HTTP_TEST_CLIENT_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gyre::bench::testing {

struct HttpResponse {
  std::string status_line;                                    // without CRLF
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // in order, as sent
  std::string body;

  // The value of the first header named `name` (case-insensitive), or nullptr.
  const std::string* Header(absl::string_view name) const;
};

// Parses one response from the start of `data`: returns the bytes it used and fills
// `*out`; returns 0 when `data` holds no complete response yet, and InvalidArgument
// when it is not a response (a body needs Content-Length; none of ours lacks one).
absl::StatusOr<size_t> ParseResponse(absl::string_view data, HttpResponse* out);

class TestConnection {
 public:
  // Connects to 127.0.0.1:port (TCP_NODELAY, so small writes go out as written).
  static absl::StatusOr<TestConnection> Connect(int port);

  TestConnection(TestConnection&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), buffered_(std::move(other.buffered_)) {}
  TestConnection& operator=(TestConnection&&) = delete;
  ~TestConnection();

  int fd() const { return fd_; }

  // Writes all of `bytes` (blocking).
  absl::Status WriteAll(absl::string_view bytes);
  // Half-closes the connection (FIN), reads still work.
  absl::Status ShutdownWrite();

  // Reads until one complete response is buffered and returns it; DeadlineExceeded when
  // none arrived by then, Unavailable when the server closed first.
  absl::StatusOr<HttpResponse> ReadResponse(absl::Duration timeout);
  // Writes `request`, then reads one response (the first error of the two).
  absl::StatusOr<HttpResponse> RoundTrip(absl::string_view request, absl::Duration timeout);
  // Returns OK once the server closed the connection (end of stream) and nothing but
  // the end of stream arrived; FailedPrecondition when bytes arrived instead.
  absl::Status ExpectClosed(absl::Duration timeout);

  // Reads what is available into the buffer, waiting at most `timeout` for the first
  // byte, at most `max_bytes`. Returns the bytes read (0 at end of stream), or
  // DeadlineExceeded.
  absl::StatusOr<size_t> ReadSome(absl::Duration timeout, size_t max_bytes = 64 * 1024);

  // Bytes read but not yet taken by ReadResponse.
  std::string& buffered() { return buffered_; }

 private:
  explicit TestConnection(int fd) : fd_(fd) {}

  int fd_;
  std::string buffered_;
};

}  // namespace gyre::bench::testing

#endif  // GYRE_BENCHMARKS_HTTP_HTTP_TEST_CLIENT_H_
