#include "gyre/examples/common/server_cli.h"

#include <pthread.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/channel/channel_option.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/oio/oio_event_loop_group.h"
#include "gyre/transport/oio/oio_server_socket_channel.h"

namespace gyre::examples {
namespace {

// ServeUntilSignal on groups already made.
template <typename ServerChannel>
int Serve(const ServerSpec& spec, EventLoopGroup& bosses, EventLoopGroup& workers,
          std::function<absl::Status(Channel&)> init) {
  ServerBootstrap bootstrap;
  bootstrap.Group(&bosses, &workers)
      .Channel<ServerChannel>()
      .ChildOption(ChannelOption::kTcpNodelay, true)
      .ChildHandler(std::make_shared<ChannelInitializer>(std::move(init)));
  absl::StatusOr<std::shared_ptr<Channel>> listening = bootstrap.Bind(spec.address).Sync();
  int code = 0;
  if (listening.ok()) {
    const size_t loops = workers.executors().size();
    const std::string shape =
        spec.transport == "oio"
            ? "oio, a thread per connection"
            : absl::StrCat("nio, ", loops, loops == 1 ? " worker loop" : " worker loops");
    std::printf("%s listening on %s (%s)\n", spec.name.c_str(),
                (*listening)->local_address().ToString().c_str(), shape.c_str());
    std::fflush(stdout);
    WaitForShutdownSignal(spec.signals);
    (void)(*listening)->Close().Await();
  } else {
    code = Fail(spec.name, listening.status());
  }
  (void)workers.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(2)).Await();
  (void)bosses.ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(2)).Await();
  return code;
}

// Makes the boss and worker groups of `Group` (Create's arguments `boss_arg`,
// `worker_arg`), then serves.
template <typename Group, typename ServerChannel>
int MakeGroupsAndServe(const ServerSpec& spec, int boss_arg, int worker_arg,
                       std::function<absl::Status(Channel&)> init) {
  auto bosses = Group::Create(boss_arg);
  if (!bosses.ok()) return Fail(spec.name, bosses.status());
  auto workers = Group::Create(worker_arg);
  if (!workers.ok()) return Fail(spec.name, workers.status());
  return Serve<ServerChannel>(spec, **bosses, **workers, std::move(init));
}

// The server the flags describe: InvalidArgument unless 0 <= port <= 65535 (0: any free
// port), threads >= 0 (0: the default), `host` is a numeric address and `transport` is
// "nio" or "oio".
absl::StatusOr<ServerSpec> MakeServerSpec(std::string name, const std::string& host, int port,
                                          int threads, std::string transport) {
  if (port < 0 || port > 65535) return absl::InvalidArgumentError("--port must be 0..65535");
  if (threads < 0) return absl::InvalidArgumentError("--threads must be >= 0");
  if (transport != "nio" && transport != "oio") {
    return absl::InvalidArgumentError("--transport must be nio or oio");
  }
  absl::StatusOr<SocketAddress> address = SocketAddress::FromHostAndPort(host, port);
  if (!address.ok()) return address.status();
  ServerSpec spec;
  spec.name = std::move(name);
  spec.transport = std::move(transport);
  spec.address = *address;
  spec.threads = threads;
  return spec;
}

}  // namespace

sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

void WaitForShutdownSignal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
}

std::optional<ServerSpec> ParseServerCommandLine(std::string name, int argc, char** argv,
                                                 const ServerFlags& flags) {
  absl::ParseCommandLine(argc, argv);
  const sigset_t signals = BlockShutdownSignals();  // before any thread
  absl::StatusOr<ServerSpec> spec =
      MakeServerSpec(name, absl::GetFlag(flags.host), absl::GetFlag(flags.port),
                     absl::GetFlag(flags.threads), absl::GetFlag(flags.transport));
  if (!spec.ok()) {
    Fail(name, spec.status());
    return std::nullopt;
  }
  spec->signals = signals;
  return *std::move(spec);
}

int ServeUntilSignal(const ServerSpec& spec, std::function<absl::Status(Channel&)> init) {
  if (spec.transport == "oio") {
    // The boss group accepts with no cap; the workers cap the connections at --threads.
    return MakeGroupsAndServe<OioEventLoopGroup, OioServerSocketChannel>(
        spec, 0, spec.threads, std::move(init));
  }
  if (spec.transport != "nio") {
    return Fail(spec.name, absl::InvalidArgumentError("--transport must be nio or oio"));
  }
  return MakeGroupsAndServe<NioEventLoopGroup, NioServerSocketChannel>(
      spec, 1, spec.threads, std::move(init));
}

int Fail(const std::string& name, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s\n", name.c_str(), status.ToString().c_str());
  return 1;
}

}  // namespace gyre::examples
