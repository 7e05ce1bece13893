// The TechEmpower plaintext server on gyre: HttpServerCodec (keeping connections alive)
// and HelloHandler in each connection's pipeline.
//
//   hello_server --port=8080 --threads=1
//   hello_server --port=8080 --transport=oio        # a thread per connection
//   curl http://127.0.0.1:8080/plaintext            # Hello, World!
//
// nio: one loop accepts; --threads loops (0: twice the cores) serve the connections.
// oio: one thread accepts; each connection gets its own thread (--threads > 0 caps the
// connections served at once). Prints "listening on HOST:PORT" once bound.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "gyre/examples/common/server_cli.h"
#include "gyre/channel/socket_address.h"
#include "gyre/examples/http/hello_handler.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/oio/oio_event_loop_group.h"
#include "gyre/transport/oio/oio_server_socket_channel.h"

ABSL_FLAG(int, port, 8080, "TCP port to listen on (0: any free port)");
ABSL_FLAG(int, threads, 0, "nio: worker loops (0: twice the hardware concurrency); "
                           "oio: most connections at once (0: no cap)");
ABSL_FLAG(std::string, host, "127.0.0.1", "numeric address to bind");
ABSL_FLAG(std::string, transport, "nio", "nio (epoll loops) or oio (a thread per connection)");

namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "hello_server: %s\n", s.ToString().c_str());
  return 1;
}

template <typename Group, typename Server, typename Child>
int Serve(Group& bosses, Group& workers, const gyre::SocketAddress& addr,
          std::shared_ptr<gyre::HelloHandler> hello, const sigset_t& signals, const char* what) {
  typename Server::ChildSetup setup;
  setup.group = workers.get();
  setup.initializer = [hello](Child& child) {
    absl::Status s = gyre::AddHelloPipeline(child.pipeline(), hello);
    if (!s.ok()) child.Close();
  };
  setup.options.push_back(gyre::ChannelOptionSetting{gyre::ChannelOptionId::kTcpNodelay,
                                                     "TCP_NODELAY", true});
  auto server = Server::Create(std::move(setup));
  gyre::ChannelFuture registered = bosses->Register(server);
  (void)registered.Await();
  if (!registered.IsSuccess()) return Fail(registered.Cause());
  gyre::ChannelFuture bound = server->Bind(addr);
  (void)bound.Await();
  if (!bound.IsSuccess()) return Fail(bound.Cause());
  std::printf("listening on %s (%s)\n", server->local_address().ToString().c_str(), what);
  std::fflush(stdout);
  gyre::examples::WaitForShutdownSignal(signals);
  (void)server->Close().Await();
  (void)workers->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(2)).Await();
  (void)bosses->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(2)).Await();
  std::fprintf(stderr, "hello_server: %llu requests, %llu bad requests\n",
               static_cast<unsigned long long>(hello->requests()),
               static_cast<unsigned long long>(hello->bad_requests()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const sigset_t signals = gyre::examples::BlockShutdownSignals();  // before any thread
  const int threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<gyre::SocketAddress> addr = gyre::examples::ServerAddress(
      absl::GetFlag(FLAGS_host), absl::GetFlag(FLAGS_port), threads);
  if (!addr.ok()) return Fail(addr.status());
  auto hello = std::make_shared<gyre::HelloHandler>();

  const std::string transport = absl::GetFlag(FLAGS_transport);
  if (transport == "oio") {
    auto bosses = gyre::OioEventLoopGroup::Create();
    if (!bosses.ok()) return Fail(bosses.status());
    auto workers = gyre::OioEventLoopGroup::Create(threads);
    if (!workers.ok()) return Fail(workers.status());
    return Serve<std::unique_ptr<gyre::OioEventLoopGroup>, gyre::OioServerSocketChannel,
                 gyre::OioSocketChannel>(*bosses, *workers, *addr, hello, signals, "oio");
  }
  if (transport != "nio") return Fail(absl::InvalidArgumentError("--transport must be nio or oio"));
  auto bosses = gyre::NioEventLoopGroup::Create(1);
  if (!bosses.ok()) return Fail(bosses.status());
  auto workers = gyre::NioEventLoopGroup::Create(threads);
  if (!workers.ok()) return Fail(workers.status());
  return Serve<std::unique_ptr<gyre::NioEventLoopGroup>, gyre::NioServerSocketChannel,
               gyre::NioSocketChannel>(*bosses, *workers, *addr, hello, signals, "nio");
}
