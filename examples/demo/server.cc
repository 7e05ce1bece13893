// gyre's showcase server (`./dev demo`): an HTTP/1.1 plaintext server (//codec/http) on a NioEventLoopGroup
// named "workers" (accepting on its boss group "boss"), a DefaultEventExecutorGroup
// "blocking" doing periodic work, and the gRPC admin service on loopback.
//
//   bazel run //examples/demo:server -- --http_port=8080
//
// Prints one line when ready, for scripts:
//   gyre-demo ready admin=127.0.0.1:PORT http=PORT pid=PID
// Exits 0 once "workers" has terminated (e.g. `gyrectl shutdown workers --wait`), or on
// SIGINT / SIGTERM, after shutting everything down.
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gyre/examples/common/server_cli.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/examples/http/hello_handler.h"
#include "gyre/tools/admin/admin_server.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"

ABSL_FLAG(int, http_port, 0, "HTTP port on 127.0.0.1 (0: any free port)");
ABSL_FLAG(std::string, admin_address, "127.0.0.1:0", "admin service address (loopback)");
ABSL_FLAG(int, workers, 2, "event loops in the \"workers\" group");

namespace {

// The HTTP side: gyre's HTTP/1.1 codec and the plaintext application.
std::shared_ptr<gyre::HelloHandler> g_hello = std::make_shared<gyre::HelloHandler>();

absl::Status AddHttpHandlers(gyre::Channel& ch) { return gyre::AddHelloPipeline(ch.pipeline(), g_hello); }

// A little CPU work, standing in for a blocking call.
uint64_t Work() {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < 200000; ++i) h = (h ^ static_cast<uint64_t>(i)) * 1099511628211ull;
  return h;
}

int Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "gyre-demo: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Signals are taken synchronously below; block them before any thread starts.
  const sigset_t signals = gyre::examples::BlockShutdownSignals();

  gyre::GroupOptions boss_options, worker_options, blocking_options;
  boss_options.name = "boss";
  worker_options.name = "workers";
  blocking_options.name = "blocking";
  auto boss = gyre::NioEventLoopGroup::Create(1, boss_options);
  if (!boss.ok()) return Fail("boss group", boss.status());
  auto workers = gyre::NioEventLoopGroup::Create(absl::GetFlag(FLAGS_workers), worker_options);
  if (!workers.ok()) return Fail("workers group", workers.status());
  auto blocking = gyre::DefaultEventExecutorGroup::Create(2, blocking_options);
  if (!blocking.ok()) return Fail("blocking group", blocking.status());

  std::atomic<uint64_t> sink{0};
  for (gyre::EventExecutor* e : (*blocking)->executors()) {
    e->ScheduleAtFixedRate([&sink] { sink.fetch_add(Work(), std::memory_order_relaxed); },
                           absl::Milliseconds(10), absl::Milliseconds(50));
  }

  gyre::ServerBootstrap http;
  http.Group(boss->get(), workers->get())
      .Channel<gyre::NioServerSocketChannel>()
      .ChildOption(gyre::ChannelOption::kTcpNodelay, true)
      .ChildHandler(std::make_shared<gyre::ChannelInitializer>(AddHttpHandlers));
  auto listening =
      http.Bind(gyre::SocketAddress::Loopback(static_cast<uint16_t>(absl::GetFlag(FLAGS_http_port))))
          .Sync();
  if (!listening.ok()) return Fail("HTTP bind", listening.status());

  gyre::AdminServerOptions admin_options;
  admin_options.address = absl::GetFlag(FLAGS_admin_address);
  auto admin = gyre::AdminServer::Start(admin_options);
  if (!admin.ok()) return Fail("admin service", admin.status());

  std::printf("gyre-demo ready admin=%s http=%d pid=%d\n", (*admin)->address().c_str(),
              static_cast<int>((*listening)->local_address().port()), static_cast<int>(getpid()));
  std::fflush(stdout);

  const absl::Time started = absl::Now();
  std::string reason = "workers terminated";
  for (;;) {
    if ((*workers)->IsTerminated()) break;
    timespec wait{0, 100'000'000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      reason = sig == SIGINT ? "SIGINT" : "SIGTERM";
      break;
    }
  }
  (*listening)->Close().AwaitFor(absl::Seconds(2));
  (*workers)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).AwaitFor(absl::Seconds(6));
  (*blocking)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).AwaitFor(absl::Seconds(6));
  (*boss)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).AwaitFor(absl::Seconds(6));
  (*admin)->Shutdown();
  std::printf("gyre-demo stopped (%s) after %s: %llu HTTP requests served\n", reason.c_str(),
              absl::FormatDuration(absl::Trunc(absl::Now() - started, absl::Milliseconds(1))).c_str(),
              static_cast<unsigned long long>(g_hello->requests()));
  return 0;
}
