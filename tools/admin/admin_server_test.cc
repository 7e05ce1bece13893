// The admin service over real gRPC on 127.0.0.1 (port 0) and on a unix socket.
#include "gyre/tools/admin/admin_server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "gyre/channel/bootstrap.h"
#include "gyre/channel/channel_initializer.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/transport/nio/nio_event_loop_group.h"
#include "gyre/transport/nio/nio_server_socket_channel.h"
#include "gyre/transport/nio/nio_socket_channel.h"
#include "gyre/testing/budget.h"
#include "tools/admin/admin.grpc.pb.h"

namespace gyre {
namespace {

namespace pb = ::gyre::admin::v1;

std::unique_ptr<AdminServer> StartServer(AdminServerOptions options = {}) {
  absl::StatusOr<std::unique_ptr<AdminServer>> s = AdminServer::Start(std::move(options));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

class Client {
 public:
  explicit Client(const std::string& target, std::string token = "")
      : stub_(pb::Admin::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))),
        token_(std::move(token)) {}

  // A context with a 5 s deadline (or `deadline`) and the token, if any.
  std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline = absl::Seconds(5)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
    return ctx;
  }

  grpc::Status List(pb::ListGroupsResponse* out) {
    auto ctx = Ctx();
    return stub_->ListGroups(ctx.get(), pb::ListGroupsRequest(), out);
  }
  grpc::Status Get(const std::string& name, pb::GetGroupResponse* out,
                   int64_t threshold_nanos = 0, absl::Duration deadline = absl::Seconds(5)) {
    auto ctx = Ctx(deadline);
    pb::GetGroupRequest req;
    req.set_name(name);
    if (threshold_nanos != 0) req.set_stall_threshold_nanos(threshold_nanos);
    return stub_->GetGroup(ctx.get(), req, out);
  }
  grpc::Status Shutdown(const pb::ShutdownGroupRequest& req,
                        std::vector<pb::ShutdownGroupResponse>* out) {
    auto ctx = Ctx(absl::Seconds(20));
    auto reader = stub_->ShutdownGroup(ctx.get(), req);
    pb::ShutdownGroupResponse r;
    while (reader->Read(&r)) out->push_back(r);
    return reader->Finish();
  }
  grpc::Status Watch(const pb::WatchGroupRequest& req, std::vector<pb::WatchGroupResponse>* out) {
    auto ctx = Ctx(absl::Seconds(20));
    auto reader = stub_->WatchGroup(ctx.get(), req);
    pb::WatchGroupResponse r;
    while (reader->Read(&r)) out->push_back(r);
    return reader->Finish();
  }
  pb::Admin::Stub& stub() { return *stub_; }

 private:
  std::unique_ptr<pb::Admin::Stub> stub_;
  std::string token_;
};

std::unique_ptr<DefaultEventExecutorGroup> MakeGroup(const std::string& name, int n) {
  GroupOptions o;
  o.name = name;
  auto g = DefaultEventExecutorGroup::Create(n, o);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : nullptr;
}

const pb::Group* FindIn(const pb::ListGroupsResponse& list, const std::string& name) {
  for (const pb::Group& g : list.groups()) {
    if (g.name() == name) return &g;
  }
  return nullptr;
}

// An admin server, a group of `n` executors named `group_name`, and a client of the
// server: `auto [server, group, client] = Serve("g", 1);`.
struct Served {
  std::unique_ptr<AdminServer> server;
  std::unique_ptr<DefaultEventExecutorGroup> group;
  Client client;
};
Served Serve(const std::string& group_name, int n, AdminServerOptions options = {}) {
  std::unique_ptr<AdminServer> server = StartServer(std::move(options));
  std::string target = server != nullptr ? server->address() : "unix:/nonexistent";
  return Served{std::move(server), MakeGroup(group_name, n), Client(target)};
}

pb::ShutdownGroupRequest ShutdownReq(const std::string& name, bool wait) {
  pb::ShutdownGroupRequest req;
  req.set_name(name);
  req.set_quiet_period_nanos(0);
  req.set_timeout_nanos(absl::ToInt64Nanoseconds(absl::Seconds(5)));
  req.set_wait(wait);
  return req;
}

TEST(AdminServerTest, ListGroupsReflectsRealExecutorState) {
  auto [server, group, client] = Serve("t-list", 2);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  EXPECT_TRUE(absl::StartsWith(server->address(), "127.0.0.1:"));

  pb::ListGroupsResponse before;
  ASSERT_TRUE(client.List(&before).ok());
  const pb::Group* g = FindIn(before, "t-list");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->kind(), pb::GROUP_KIND_EXECUTOR);
  EXPECT_EQ(g->executor_count(), 2);
  EXPECT_EQ(g->state(), pb::EXECUTOR_STATE_NOT_STARTED);
  EXPECT_EQ(g->completed_tasks(), 0u);
  EXPECT_EQ(g->executors_size(), 0);  // totals only
  ASSERT_NE(FindIn(before, "global"), nullptr);
  EXPECT_EQ(FindIn(before, "global")->kind(), pb::GROUP_KIND_GLOBAL);

  std::vector<Future<int>> results;
  for (int i = 0; i < 10; ++i) results.push_back(group->Submit([i] { return i; }));
  for (auto& r : results) ASSERT_TRUE(r.Sync().ok());
  // The counter is published after each batch: wait for it (bounded), not for time.
  pb::ListGroupsResponse after;
  absl::Time deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    after.Clear();
    ASSERT_TRUE(client.List(&after).ok());
  } while (FindIn(after, "t-list")->completed_tasks() < 10 && absl::Now() < deadline);
  g = FindIn(after, "t-list");
  EXPECT_EQ(g->state(), pb::EXECUTOR_STATE_STARTED);
  EXPECT_EQ(g->completed_tasks(), 10u);

  pb::GetGroupResponse got;
  ASSERT_TRUE(client.Get("t-list", &got).ok());
  ASSERT_EQ(got.group().executors_size(), 2);
  for (const pb::Executor& x : got.group().executors()) {
    EXPECT_EQ(x.state(), pb::EXECUTOR_STATE_STARTED);
    EXPECT_FALSE(x.thread_name().empty());
    EXPECT_GT(x.os_tid(), 0);
    EXPECT_EQ(x.completed_tasks(), 5u);  // round-robin over two
    EXPECT_FALSE(x.event_loop());
    EXPECT_FALSE(x.stalled());
  }
}

TEST(AdminServerTest, GetGroupShowsEventLoopChannelsAndIoTime) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  GroupOptions o;
  o.name = "t-nio";
  auto loops = NioEventLoopGroup::Create(1, o);
  ASSERT_TRUE(loops.ok());
  ServerBootstrap bootstrap;
  bootstrap.Group(loops->get(), loops->get())
      .Channel<NioServerSocketChannel>()
      .ChildHandler(std::make_shared<ChannelInitializer>([](Channel&) { return absl::OkStatus(); }));
  auto listening = bootstrap.Bind(SocketAddress::Loopback(0)).Sync();
  ASSERT_TRUE(listening.ok()) << listening.status();
  // A raw client: the accept is I/O on the loop.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>((*listening)->local_address().port()));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);

  Client client(server->address());
  pb::GetGroupResponse got;
  absl::Time deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    got.Clear();
    ASSERT_TRUE(client.Get("t-nio", &got).ok());
  } while (got.group().registered_channels() < 2 && absl::Now() < deadline);
  EXPECT_EQ(got.group().kind(), pb::GROUP_KIND_NIO);
  ASSERT_EQ(got.group().executors_size(), 1);
  const pb::Executor& x = got.group().executors(0);
  EXPECT_TRUE(x.event_loop());
  EXPECT_EQ(x.registered_channels(), 2);  // the listener and the accepted child
  EXPECT_GT(x.io_nanos(), 0);
  EXPECT_GT(x.uptime_nanos(), 0);
  close(fd);
  (*listening)->Close().Await().IgnoreError();
}

TEST(AdminServerTest, ShutdownGroupTerminatesGroupAndCompletesTerminationFuture) {
  auto [server, group, client] = Serve("t-shutdown", 2);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  ASSERT_TRUE(group->Submit([] { return 1; }).Sync().ok());  // started

  std::vector<pb::ShutdownGroupResponse> progress;
  grpc::Status s = client.Shutdown(ShutdownReq("t-shutdown", /*wait=*/true), &progress);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(progress.back().final());
  EXPECT_EQ(progress.back().state(), pb::EXECUTOR_STATE_TERMINATED);
  EXPECT_TRUE(group->TerminationFuture().IsDone());
  EXPECT_TRUE(group->IsTerminated());

  // Again: already terminated.
  progress.clear();
  s = client.Shutdown(ShutdownReq("t-shutdown", true), &progress);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
}

TEST(AdminServerTest, ShutdownWithoutWaitReturnsAtOnce) {
  auto [server, group, client] = Serve("t-nowait", 1);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  ASSERT_TRUE(group->Submit([] { return 1; }).Sync().ok());  // started
  pb::ShutdownGroupRequest req = ShutdownReq("t-nowait", /*wait=*/false);
  req.set_quiet_period_nanos(absl::ToInt64Nanoseconds(absl::Seconds(1)));
  std::vector<pb::ShutdownGroupResponse> progress;
  ASSERT_TRUE(client.Shutdown(req, &progress).ok());
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_TRUE(progress[0].final());
  EXPECT_GE(progress[0].state(), pb::EXECUTOR_STATE_SHUTTING_DOWN);
  EXPECT_TRUE(group->IsShuttingDown());
  EXPECT_TRUE(group->TerminationFuture().AwaitFor(gyre::testing::Scaled(absl::Seconds(10))));
}

TEST(AdminServerTest, StalledLoopIsReportedAndTheRpcStillAnswers) {
  AdminServerOptions o;
  o.stall_threshold = absl::Milliseconds(30);  // ListGroups uses the server's threshold
  auto [server, group, client] = Serve("t-stall", 1, o);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  const int64_t threshold = absl::ToInt64Nanoseconds(absl::Milliseconds(30));

  ASSERT_TRUE(group->Submit([] { return 1; }).Sync().ok());
  pb::GetGroupResponse idle;
  ASSERT_TRUE(client.Get("t-stall", &idle, threshold).ok());
  EXPECT_FALSE(idle.group().executors(0).stalled());
  EXPECT_FALSE(idle.group().executors(0).running_task());

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> entered;
  ASSERT_TRUE(group->Next()->Execute([released, &entered] {
    entered.set_value();
    released.wait();  // the loop is stuck here until the test lets go
  }).ok());
  entered.get_future().wait();
  Future<int> queued = group->Submit([] { return 2; });  // work waiting behind it

  pb::GetGroupResponse got;
  absl::Time deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    got.Clear();
    // Each call must answer well within its deadline although the loop is stuck.
    grpc::Status s = client.Get("t-stall", &got, threshold, absl::Seconds(2));
    ASSERT_TRUE(s.ok()) << s.error_message();
  } while (!got.group().executors(0).stalled() && absl::Now() < deadline);
  const pb::Executor& x = got.group().executors(0);
  EXPECT_TRUE(x.stalled());
  EXPECT_TRUE(x.running_task());
  EXPECT_GT(x.running_task_age_nanos(), threshold);
  EXPECT_GE(x.pending_tasks(), 1u);
  EXPECT_EQ(got.group().stalled_executors(), 1);

  pb::ListGroupsResponse list;
  ASSERT_TRUE(client.List(&list).ok());
  EXPECT_EQ(FindIn(list, "t-stall")->stalled_executors(), 1);

  release.set_value();
  ASSERT_TRUE(queued.Sync().ok());
  got.Clear();
  deadline = absl::Now() + gyre::testing::Scaled(absl::Seconds(10));
  do {
    got.Clear();
    ASSERT_TRUE(client.Get("t-stall", &got, threshold).ok());
  } while (got.group().executors(0).stalled() && absl::Now() < deadline);
  EXPECT_FALSE(got.group().executors(0).stalled());
}

TEST(AdminServerTest, WatchGroupStreamsSamplesAndEndsOnTermination) {
  auto [server, group, client] = Serve("t-watch", 1);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  pb::WatchGroupRequest req;
  req.set_name("t-watch");
  req.set_interval_nanos(absl::ToInt64Nanoseconds(absl::Milliseconds(10)));
  req.set_max_samples(3);
  std::vector<pb::WatchGroupResponse> samples;
  ASSERT_TRUE(client.Watch(req, &samples).ok());
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].group().name(), "t-watch");
  EXPECT_EQ(samples[0].group().executors_size(), 1);
  EXPECT_LE(samples[0].sampled_at_unix_nanos(), samples[2].sampled_at_unix_nanos());

  group->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(5)).Await().IgnoreError();
  req.set_max_samples(0);  // unbounded: ends because the group terminated
  samples.clear();
  ASSERT_TRUE(client.Watch(req, &samples).ok());
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].group().state(), pb::EXECUTOR_STATE_TERMINATED);
}

TEST(AdminServerTest, ErrorsCarryTheirCodes) {
  auto [server, group, client] = Serve("t-errors", 1);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  pb::GetGroupResponse got;
  EXPECT_EQ(client.Get("no-such-group", &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(client.Get("t-errors", &got, -5).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  std::vector<pb::ShutdownGroupResponse> progress;
  EXPECT_EQ(client.Shutdown(ShutdownReq("no-such-group", false), &progress).error_code(),
            grpc::StatusCode::NOT_FOUND);
  pb::ShutdownGroupRequest bad = ShutdownReq("t-errors", false);
  bad.set_quiet_period_nanos(-1);
  EXPECT_EQ(client.Shutdown(bad, &progress).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bad = ShutdownReq("t-errors", false);
  bad.set_quiet_period_nanos(absl::ToInt64Nanoseconds(absl::Seconds(3)));
  bad.set_timeout_nanos(absl::ToInt64Nanoseconds(absl::Seconds(1)));
  EXPECT_EQ(client.Shutdown(bad, &progress).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client.Shutdown(ShutdownReq("global", false), &progress).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(progress.empty());
  EXPECT_FALSE(group->IsShuttingDown());  // none of the refused calls touched it

  pb::WatchGroupRequest watch;
  watch.set_name("t-errors");
  watch.set_interval_nanos(0);
  std::vector<pb::WatchGroupResponse> samples;
  EXPECT_EQ(client.Watch(watch, &samples).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  watch.set_name("no-such-group");
  watch.set_interval_nanos(absl::ToInt64Nanoseconds(absl::Milliseconds(50)));
  EXPECT_EQ(client.Watch(watch, &samples).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(AdminServerTest, TokenIsRequiredWhenSet) {
  AdminServerOptions o;
  o.token = "s3cret-token";
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  pb::ListGroupsResponse list;
  EXPECT_EQ(Client(server->address()).List(&list).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Client(server->address(), "wrong").List(&list).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Client(server->address(), "s3cret-token-longer").List(&list).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  pb::GetProcessResponse process;
  Client bad(server->address(), "s3cret-tokeN");
  auto ctx = bad.Ctx();
  EXPECT_EQ(bad.stub().GetProcess(ctx.get(), pb::GetProcessRequest(), &process).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Client(server->address(), "s3cret-token").List(&list).ok());
}

TEST(AdminServerTest, ReadOnlyRefusesShutdown) {
  AdminServerOptions o;
  o.read_only = true;
  auto [server, group, client] = Serve("t-readonly", 1, o);
  ASSERT_TRUE(server != nullptr && group != nullptr);
  std::vector<pb::ShutdownGroupResponse> progress;
  EXPECT_EQ(client.Shutdown(ShutdownReq("t-readonly", true), &progress).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(group->IsShuttingDown());
  pb::GetGroupResponse got;
  EXPECT_TRUE(client.Get("t-readonly", &got).ok());  // reading is still allowed
}

TEST(AdminServerTest, NonLoopbackWithoutTokenIsRefusedAtStart) {
  for (const char* address : {"0.0.0.0:0", "[::]:0", "10.1.2.3:0", ":0", "example.com:0"}) {
    AdminServerOptions o;
    o.address = address;
    absl::StatusOr<std::unique_ptr<AdminServer>> s = AdminServer::Start(o);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:0"));
  EXPECT_TRUE(IsLoopbackAddress("127.5.0.1:80"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:0"));
  EXPECT_TRUE(IsLoopbackAddress("unix:/tmp/x.sock"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1:0"));
  AdminServerOptions bad_token;
  bad_token.token = "has space";
  EXPECT_EQ(AdminServer::Start(bad_token).status().code(), absl::StatusCode::kInvalidArgument);
  AdminServerOptions no_port;
  no_port.address = "127.0.0.1";
  EXPECT_EQ(AdminServer::Start(no_port).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AdminServerTest, UnixSocketHasMode0600AndServes) {
  std::string path = absl::StrCat("/tmp/gyre-admin-test-", getpid(), ".sock");
  AdminServerOptions o;
  o.address = "unix:" + path;
  auto server = StartServer(o);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->address(), "unix:" + path);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto group = MakeGroup("t-unix", 1);
  Client client(server->address());
  pb::GetGroupResponse got;
  ASSERT_TRUE(client.Get("t-unix", &got).ok());
  EXPECT_EQ(got.group().executor_count(), 1);
  server.reset();
  EXPECT_NE(stat(path.c_str(), &st), 0);  // removed on shutdown
}

TEST(AdminServerTest, GetProcessDescribesThisProcess) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Client client(server->address());
  pb::GetProcessResponse p;
  auto ctx = client.Ctx();
  ASSERT_TRUE(client.stub().GetProcess(ctx.get(), pb::GetProcessRequest(), &p).ok());
  EXPECT_EQ(p.pid(), getpid());
  EXPECT_EQ(p.gyre_version(), kGyreVersion);
  EXPECT_GT(p.thread_count(), 1);  // this thread and gRPC's
  EXPECT_GT(p.uptime_nanos(), 0);
  EXPECT_EQ(p.admin_address(), server->address());
}

TEST(AdminServerTest, ReflectionListsTheAdminService) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto call = stub.PrepareCall(&ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                               &cq);
  void* tag;
  bool ok;
  auto next = [&](intptr_t want) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(next(1));
  // ServerReflectionRequest{list_services: ""}: field 7, length-delimited, empty.
  const char request[] = {0x3a, 0x00};
  grpc::Slice slice(request, sizeof(request));
  grpc::ByteBuffer out(&slice, 1);
  call->Write(out, reinterpret_cast<void*>(2));
  ASSERT_TRUE(next(2));
  call->WritesDone(reinterpret_cast<void*>(3));
  ASSERT_TRUE(next(3));
  grpc::ByteBuffer in;
  call->Read(&in, reinterpret_cast<void*>(4));
  ASSERT_TRUE(next(4));
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(in.Dump(&slices).ok());
  std::string bytes;
  for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("gyre.admin.v1.Admin"), std::string::npos);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  next(5);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

}  // namespace
}  // namespace gyre
