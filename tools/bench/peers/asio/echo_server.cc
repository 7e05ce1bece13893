// A single-threaded Boost.Asio TCP echo server, the asio peer of gyre's echo_server in the
// network benchmarks (net/echo/asio/<size>): one io_context on the main thread accepts and
// serves every connection; each connection reads with async_read_some into a 64 KiB
// buffer (as raw_epoll_echo reads up to 64 KiB) and writes what it read back with
// async_write before reading again. TCP_NODELAY on the accepted sockets.
//
//   asio_echo_server --host=127.0.0.1 --port=0
//
// Prints "listening on HOST:PORT" (flushed) once bound; runs until SIGTERM or SIGINT.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/write.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr size_t kBufferSize = 64 * 1024;

class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : socket_(std::move(socket)), buffer_(kBufferSize) {}

  void Read() {
    socket_.async_read_some(
        asio::buffer(buffer_),
        [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
          if (!ec) self->Write(n);
        });
  }

 private:
  void Write(size_t n) {
    asio::async_write(socket_, asio::buffer(buffer_.data(), n),
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        if (!ec) self->Read();
                      });
  }

  tcp::socket socket_;
  std::vector<char> buffer_;
};

void Accept(tcp::acceptor& acceptor) {
  acceptor.async_accept([&acceptor](const boost::system::error_code& ec, tcp::socket socket) {
    if (!ec) {
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      std::make_shared<Session>(std::move(socket))->Read();
    } else if (ec == asio::error::operation_aborted) {
      return;
    }
    Accept(acceptor);
  });
}

constexpr Cli kCli{"asio_echo_server", "[--host=127.0.0.1] [--port=N (0: any free port)]"};

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  long long port = 8007;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--host=", 0) == 0) {
      host = a.substr(7);
    } else if (a.rfind("--port=", 0) == 0) {
      port = kCli.Int(a, 7, 0, 65535);
    } else {
      kCli.Usage("unknown argument " + a);
    }
  }
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) kCli.Usage("--host must be a numeric address: " + host);

  asio::io_context ioc(1);
  tcp::acceptor acceptor(ioc);
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(1024, ec);
  if (ec) {
    std::fprintf(stderr, "asio_echo_server: cannot listen on %s:%lld: %s\n", host.c_str(), port,
                 ec.message().c_str());
    return 1;
  }
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&ioc](const boost::system::error_code&, int) { ioc.stop(); });

  const tcp::endpoint bound = acceptor.local_endpoint();
  std::string shown = bound.address().to_string();
  if (bound.address().is_v6()) shown = "[" + shown + "]";
  std::printf("listening on %s:%u\n", shown.c_str(), static_cast<unsigned>(bound.port()));
  std::fflush(stdout);

  Accept(acceptor);
  ioc.run();
  return 0;
}
