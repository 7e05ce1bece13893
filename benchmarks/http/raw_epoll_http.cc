// raw_epoll_http: the frameworkless epoll HTTP/1.1 "plaintext" server that gyre's HTTP
// server is measured against (see raw_http_server.h for what it does and does not do).
//
//   raw_epoll_http --host=127.0.0.1 --port=0 --threads=1
//
// Prints "listening on HOST:PORT" on stdout (flushed) once the listeners are bound, so
// scripts can read an ephemeral port; runs until SIGINT or SIGTERM, then closes every
// connection and exits 0.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "gyre/benchmarks/http/raw_http_server.h"

ABSL_FLAG(std::string, host, "127.0.0.1", "numeric IPv4 or IPv6 address to bind");
ABSL_FLAG(int, port, 0, "port to listen on (0: an ephemeral port, printed at start)");
ABSL_FLAG(int, threads, 1, "I/O threads, each with its own epoll and SO_REUSEPORT listener");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);

  // Block the stop signals before any thread starts, so that every thread inherits the
  // mask and only sigwait() below receives them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // A background job of a non-interactive shell starts with SIGINT ignored, and an
  // ignored signal is discarded even while blocked: make both reach sigwait().
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);

  gyre::bench::RawHttpServerOptions options;
  options.host = absl::GetFlag(FLAGS_host);
  options.port = absl::GetFlag(FLAGS_port);
  options.threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<std::unique_ptr<gyre::bench::RawHttpServer>> server =
      gyre::bench::RawHttpServer::Create(options);
  if (!server.ok()) {
    std::fprintf(stderr, "raw_epoll_http: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on %s\n", (*server)->address().c_str());
  std::fflush(stdout);

  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  (*server)->Shutdown();
  return 0;
}
