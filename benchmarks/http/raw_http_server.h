// The raw epoll HTTP/1.1 server that gyre's HTTP server is benchmarked against
// (TechEmpower "plaintext"): no framework, just sockets, epoll and a minimal parser.
//
//   absl::StatusOr<std::unique_ptr<RawHttpServer>> server =
//       RawHttpServer::Create({.host = "127.0.0.1", .port = 0, .threads = 1});
//   if (!server.ok()) return server.status();
//   std::printf("listening on %s\n", (*server)->address().c_str());
//   ...
//   (*server)->Shutdown();
//
// Overview. Each of `threads` I/O threads owns an epoll instance and a listening socket
// bound to the same address with SO_REUSEPORT (the kernel spreads connections over
// them). Sockets are non-blocking, TCP_NODELAY, level-triggered. A ready connection is
// read once into its own input buffer; every complete request in it is answered in
// order, the responses appended to the connection's output buffer, and the batch goes
// out in one send(). When the socket takes less, the connection stops reading and waits
// for EPOLLOUT until the rest is written (so a client that does not read cannot make
// the server buffer without bound: at most kOutputHighWater bytes are produced ahead).
//
// Responses: `GET /plaintext` and `GET /` give 200 with `Hello, World!` (`HEAD` the
// same head, no body); other methods on those paths 405; other paths 404. A malformed
// head gives 400, `Transfer-Encoding` 501, a head over kMaxHeadSize 400; each of these
// closes the connection, as does `Connection: close` and any HTTP/1.0 request. Request
// bodies (Content-Length) are read and discarded. Every response carries `Server:
// gyre-raw` and an IMF-fixdate `Date:` formatted at most once a second per thread.
// Closing sends FIN after the last response and then discards input until the peer
// closes (or 1 MiB arrived), so that the response is not lost to a reset.
//
// Steady state allocates nothing: buffers belong to connection records that are
// reused after a connection closes, and grow only while a connection needs more.
//
// Not provided: timeouts (an idle or half-closed peer keeps its connection until it
// closes or the server shuts down), chunked bodies, TLS, HTTP/2.
//
// Thread safety: Create, Shutdown and the accessors are thread-safe; Shutdown is
// idempotent. Ownership: the server owns its threads, sockets and connections; the
// destructor shuts down.
#ifndef GYRE_BENCHMARKS_HTTP_RAW_HTTP_SERVER_H_
#define GYRE_BENCHMARKS_HTTP_RAW_HTTP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace gyre::bench {

struct RawHttpServerOptions {
  std::string host = "127.0.0.1";  // a numeric IPv4 or IPv6 address
  int port = 0;                    // 0: an ephemeral port, the same for every thread
  int threads = 1;                 // I/O threads, each with its own epoll and listener
  // SO_SNDBUF of accepted connections; 0 keeps the kernel's (auto-tuned) default. Tests
  // set it small to make the socket refuse writes.
  int send_buffer_bytes = 0;
};

class RawHttpServer {
 public:
  // Bytes of one request head (request line and headers) a connection may buffer.
  static constexpr size_t kMaxHeadSize = 64 * 1024;
  // Bytes of responses a connection produces ahead of what its socket accepted.
  static constexpr size_t kOutputHighWater = 256 * 1024;

  // Binds the listeners and starts the I/O threads; connections are accepted once this
  // returns. Returns InvalidArgument for a bad host, port or thread count, and the
  // errno-derived status of a failing socket call (e.g. port in use).
  static absl::StatusOr<std::unique_ptr<RawHttpServer>> Create(
      const RawHttpServerOptions& options);

  RawHttpServer(const RawHttpServer&) = delete;
  RawHttpServer& operator=(const RawHttpServer&) = delete;
  ~RawHttpServer();

  // The bound port (the ephemeral one when options.port was 0).
  int port() const { return port_; }
  // "127.0.0.1:PORT", or "[::1]:PORT" for IPv6.
  const std::string& address() const { return address_; }

  // Sends that the socket did not take whole (each one made a connection wait for
  // EPOLLOUT), over all threads so far. Thread-safe; exact once the threads are idle.
  uint64_t PartialWritesForTesting() const;

  // Stops every I/O thread, closes all connections and listeners, and joins the threads.
  // Must not be called from an I/O thread (it never is: the server runs no user code).
  void Shutdown();

  class Worker;  // one I/O thread; defined in the .cc

 private:
  RawHttpServer() = default;

  int port_ = 0;
  std::string address_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::once_flag shutdown_once_;  // Shutdown's work runs once; later callers wait for it
};

}  // namespace gyre::bench

#endif  // GYRE_BENCHMARKS_HTTP_RAW_HTTP_SERVER_H_
