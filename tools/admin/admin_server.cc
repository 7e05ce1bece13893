#include "gyre/tools/admin/admin_server.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "gyre/concurrent/executor_group_registry.h"
#include "gyre/concurrent/executor_snapshot.h"
#include "gyre/concurrent/global_event_executor.h"
#include "gyre/concurrent/multithread_event_executor_group.h"
#include "tools/admin/admin.grpc.pb.h"

namespace gyre {
namespace {

namespace pb = ::gyre::admin::v1;

constexpr char kGlobalName[] = "global";
constexpr int64_t kMinWatchIntervalNanos = 10'000'000;  // 10 ms
const absl::Duration kShutdownGrace = absl::Seconds(5);
const absl::Duration kShutdownPoll = absl::Milliseconds(10);

pb::ExecutorState ToProto(ExecutorState s) {
  switch (s) {
    case ExecutorState::kNotStarted: return pb::EXECUTOR_STATE_NOT_STARTED;
    case ExecutorState::kStarted: return pb::EXECUTOR_STATE_STARTED;
    case ExecutorState::kShuttingDown: return pb::EXECUTOR_STATE_SHUTTING_DOWN;
    case ExecutorState::kShutdown: return pb::EXECUTOR_STATE_SHUTDOWN;
    case ExecutorState::kTerminated: return pb::EXECUTOR_STATE_TERMINATED;
  }
  return pb::EXECUTOR_STATE_UNSPECIFIED;
}

pb::GroupKind KindToProto(const std::string& kind) {
  if (kind == "nio") return pb::GROUP_KIND_NIO;
  if (kind == "oio") return pb::GROUP_KIND_OIO;
  if (kind == "global") return pb::GROUP_KIND_GLOBAL;
  return pb::GROUP_KIND_EXECUTOR;
}

ExecutorState Aggregate(const std::vector<ExecutorSnapshot>& executors) {
  if (executors.empty()) return ExecutorState::kNotStarted;
  ExecutorState least = ExecutorState::kTerminated;
  bool any_started = false;
  for (const ExecutorSnapshot& e : executors) {
    least = std::min(least, e.state);
    if (e.state != ExecutorState::kNotStarted) any_started = true;
  }
  if (least >= ExecutorState::kShuttingDown) return least;
  return any_started ? ExecutorState::kStarted : ExecutorState::kNotStarted;
}

// The previous sample of an executor, for busy fractions over a watch interval.
struct Sample {
  int64_t busy_nanos = 0;
  int64_t uptime_nanos = 0;
};

// Fills `out` from `g`. `prev` (may be null or shorter) gives per-interval fractions.
void FillGroup(const GroupSnapshot& g, absl::Duration threshold, bool with_executors,
               const std::vector<Sample>* prev, pb::Group* out) {
  out->set_name(g.name);
  out->set_kind(KindToProto(g.kind));
  out->set_chooser(g.chooser);
  out->set_executor_count(static_cast<int>(g.executors.size()));
  out->set_state(ToProto(Aggregate(g.executors)));
  uint64_t pending = 0, scheduled = 0, completed = 0, rejected = 0, timer_memory = 0;
  int channels = 0, stalled = 0;
  for (size_t i = 0; i < g.executors.size(); ++i) {
    const ExecutorSnapshot& e = g.executors[i];
    pending += e.pending_tasks;
    scheduled += e.scheduled_tasks;
    completed += e.completed_tasks;
    rejected += e.rejected_tasks;
    timer_memory += e.timer_memory_bytes;
    channels += e.registered_channels;
    const bool is_stalled =
        e.running_task && e.running_task_age > threshold && e.pending_tasks > 0;
    if (is_stalled) ++stalled;
    if (!with_executors) continue;
    pb::Executor* x = out->add_executors();
    x->set_index(static_cast<int>(i));
    x->set_state(ToProto(e.state));
    x->set_thread_name(e.thread_name);
    x->set_os_tid(e.os_tid);
    x->set_pending_tasks(e.pending_tasks);
    x->set_scheduled_tasks(e.scheduled_tasks);
    x->set_completed_tasks(e.completed_tasks);
    x->set_rejected_tasks(e.rejected_tasks);
    const int64_t busy = absl::ToInt64Nanoseconds(e.busy_time + e.io_time);
    const int64_t uptime = absl::ToInt64Nanoseconds(e.uptime);
    x->set_busy_nanos(busy);
    x->set_uptime_nanos(uptime);
    double fraction = 0;
    if (prev != nullptr && i < prev->size() && uptime > (*prev)[i].uptime_nanos) {
      fraction = static_cast<double>(busy - (*prev)[i].busy_nanos) /
                 static_cast<double>(uptime - (*prev)[i].uptime_nanos);
    } else if (uptime > 0) {
      fraction = static_cast<double>(busy) / static_cast<double>(uptime);
    }
    x->set_busy_fraction(std::clamp(fraction, 0.0, 1.0));
    x->set_event_loop(e.event_loop);
    x->set_registered_channels(e.registered_channels);
    x->set_io_nanos(absl::ToInt64Nanoseconds(e.io_time));
    x->set_task_nanos(absl::ToInt64Nanoseconds(e.busy_time));
    x->set_running_task(e.running_task);
    x->set_running_task_age_nanos(absl::ToInt64Nanoseconds(e.running_task_age));
    x->set_stalled(is_stalled);
    x->set_timer_memory_bytes(e.timer_memory_bytes);
  }
  out->set_pending_tasks(pending);
  out->set_scheduled_tasks(scheduled);
  out->set_completed_tasks(completed);
  out->set_rejected_tasks(rejected);
  out->set_timer_memory_bytes(timer_memory);
  out->set_registered_channels(channels);
  out->set_stalled_executors(stalled);
}

GroupSnapshot GlobalSnapshot() {
  GroupSnapshot g;
  g.name = kGlobalName;
  g.kind = "global";
  g.chooser = "Single";
  g.executors.push_back(GlobalEventExecutor::Instance()->Snapshot());
  return g;
}

// Every live named group, then the global executor.
std::vector<GroupSnapshot> AllGroups() {
  std::vector<GroupSnapshot> all = ExecutorGroupRegistry::Global().Snapshots();
  all.push_back(GlobalSnapshot());
  return all;
}

// The first group named `name` (a registered one before the global executor).
bool FindGroup(const std::string& name, GroupSnapshot* out) {
  for (GroupSnapshot& g : ExecutorGroupRegistry::Global().Snapshots()) {
    if (g.name == name) {
      *out = std::move(g);
      return true;
    }
  }
  if (name == kGlobalName) {
    *out = GlobalSnapshot();
    return true;
  }
  return false;
}

// Executors of every registered group named `name`, concatenated.
std::vector<ExecutorSnapshot> ExecutorsNamed(const std::string& name, bool* found) {
  std::vector<ExecutorSnapshot> out;
  *found = false;
  for (GroupSnapshot& g : ExecutorGroupRegistry::Global().Snapshots()) {
    if (g.name != name) continue;
    *found = true;
    for (ExecutorSnapshot& e : g.executors) out.push_back(std::move(e));
  }
  return out;
}

grpc::Status NotFound(const std::string& name) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no executor group named \"", name, "\""));
}

grpc::Status BadArgument(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Time depends only on the longer length, never on where the strings differ.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

int64_t UnixNanosNow() { return absl::ToUnixNanos(absl::Now()); }

// Threads of this process (/proc/self/status), or 0.
int ThreadCount() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "Threads:")) return std::atoi(line.c_str() + 8);
  }
  return 0;
}

// Process uptime from /proc (start time in clock ticks since boot vs. /proc/uptime).
absl::Duration ProcessUptime(absl::Time fallback_start) {
  std::ifstream stat("/proc/self/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = content.rfind(')');
  std::ifstream up("/proc/uptime");
  double uptime_s = 0;
  if (paren != std::string::npos && (up >> uptime_s)) {
    std::istringstream fields(content.substr(paren + 2));
    std::string field;
    // Field 22 (starttime); after ')' the fields start at 3 (state).
    for (int i = 3; i <= 22 && (fields >> field); ++i) {
      if (i == 22) {
        long ticks = sysconf(_SC_CLK_TCK);
        double start_s = std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks);
        if (uptime_s >= start_s) return absl::Seconds(uptime_s - start_s);
      }
    }
  }
  return absl::Now() - fallback_start;
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  if (absl::StartsWith(address, "unix:")) return true;
  std::string host;
  if (absl::StartsWith(address, "[")) {
    size_t close = address.find(']');
    if (close == std::string::npos) return false;
    host = address.substr(1, close - 1);
  } else {
    size_t colon = address.rfind(':');
    host = colon == std::string::npos ? address : address.substr(0, colon);
  }
  if (host == "localhost") return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

class AdminServer::Impl final : public pb::Admin::Service {
 public:
  explicit Impl(AdminServerOptions options)
      : options_(std::move(options)), started_(absl::Now()) {}

  grpc::Status Init() {
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(options_.address, grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("cannot listen on ", options_.address));
    }
    if (absl::StartsWith(options_.address, "unix:")) {
      unix_path_ = options_.address.substr(5);
      if (chmod(unix_path_.c_str(), 0600) != 0) {
        int err = errno;
        server_->Shutdown();
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("cannot chmod 0600 ", unix_path_, ": ", strerror(err)));
      }
      address_ = options_.address;
    } else {
      if (port == 0) {
        server_->Shutdown();
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            absl::StrCat("cannot listen on ", options_.address));
      }
      size_t colon = options_.address.rfind(':');
      address_ = absl::StrCat(options_.address.substr(0, colon), ":", port);
    }
    return grpc::Status::OK;
  }

  void Shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
      server_->Wait();
    }
    if (!unix_path_.empty()) unlink(unix_path_.c_str());
  }

  const std::string& address() const { return address_; }

  grpc::Status ListGroups(grpc::ServerContext* ctx, const pb::ListGroupsRequest*,
                          pb::ListGroupsResponse* response) override {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    for (const GroupSnapshot& g : AllGroups()) {
      FillGroup(g, options_.stall_threshold, /*with_executors=*/false, nullptr,
                response->add_groups());
    }
    return grpc::Status::OK;
  }

  grpc::Status GetGroup(grpc::ServerContext* ctx, const pb::GetGroupRequest* request,
                        pb::GetGroupResponse* response) override {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    absl::Duration threshold;
    if (grpc::Status s = Threshold(request->has_stall_threshold_nanos(),
                                   request->stall_threshold_nanos(), &threshold);
        !s.ok()) {
      return s;
    }
    GroupSnapshot g;
    if (!FindGroup(request->name(), &g)) return NotFound(request->name());
    FillGroup(g, threshold, /*with_executors=*/true, nullptr, response->mutable_group());
    response->set_sampled_at_unix_nanos(UnixNanosNow());
    return grpc::Status::OK;
  }

  grpc::Status WatchGroup(grpc::ServerContext* ctx, const pb::WatchGroupRequest* request,
                          grpc::ServerWriter<pb::WatchGroupResponse>* writer) override {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    if (request->interval_nanos() < kMinWatchIntervalNanos) {
      return BadArgument(absl::StrCat("interval must be at least 10ms, got ",
                                      request->interval_nanos(), "ns"));
    }
    if (request->max_samples() < 0) return BadArgument("max_samples must be >= 0");
    absl::Duration threshold;
    if (grpc::Status s = Threshold(request->has_stall_threshold_nanos(),
                                   request->stall_threshold_nanos(), &threshold);
        !s.ok()) {
      return s;
    }
    const absl::Duration interval = absl::Nanoseconds(request->interval_nanos());
    std::vector<Sample> prev;
    for (int sent = 0;; ++sent) {
      GroupSnapshot g;
      if (!FindGroup(request->name(), &g)) {
        return sent == 0 ? NotFound(request->name()) : grpc::Status::OK;
      }
      pb::WatchGroupResponse response;
      FillGroup(g, threshold, /*with_executors=*/true, prev.empty() ? nullptr : &prev,
                response.mutable_group());
      response.set_sampled_at_unix_nanos(UnixNanosNow());
      prev.clear();
      for (const pb::Executor& x : response.group().executors()) {
        prev.push_back(Sample{x.busy_nanos(), x.uptime_nanos()});
      }
      if (!writer->Write(response)) return grpc::Status::OK;  // client went away
      if (response.group().state() == pb::EXECUTOR_STATE_TERMINATED) return grpc::Status::OK;
      if (request->max_samples() != 0 && sent + 1 >= request->max_samples()) {
        return grpc::Status::OK;
      }
      if (!WaitOrStop(ctx, interval)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "watch ended");
      }
    }
  }

  grpc::Status ShutdownGroup(grpc::ServerContext* ctx, const pb::ShutdownGroupRequest* request,
                             grpc::ServerWriter<pb::ShutdownGroupResponse>* writer) override {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    if (options_.read_only) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "the admin server is read-only; ShutdownGroup is refused");
    }
    const int64_t quiet_nanos =
        request->has_quiet_period_nanos() ? request->quiet_period_nanos() : 2'000'000'000;
    const int64_t timeout_nanos =
        request->has_timeout_nanos() ? request->timeout_nanos() : 15'000'000'000;
    if (quiet_nanos < 0) {
      return BadArgument(absl::StrCat("quiet period must be >= 0, got ", quiet_nanos, "ns"));
    }
    if (timeout_nanos < quiet_nanos) {
      return BadArgument(absl::StrCat("timeout (", timeout_nanos,
                                      "ns) must be >= the quiet period (", quiet_nanos, "ns)"));
    }
    const std::string& name = request->name();
    bool found = false;
    std::vector<ExecutorSnapshot> before = ExecutorsNamed(name, &found);
    if (!found) {
      if (name == kGlobalName) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            "the global executor cannot be shut down");
      }
      return NotFound(name);
    }
    if (Aggregate(before) == ExecutorState::kTerminated) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat("executor group \"", name, "\" is already terminated"));
    }
    std::vector<Future<void>> terminations =
        ExecutorGroupRegistry::Global().TerminationFutures(name);
    const absl::Time start = absl::Now();
    absl::Status started = ExecutorGroupRegistry::Global().ShutdownGracefully(
        name, absl::Nanoseconds(quiet_nanos), absl::Nanoseconds(timeout_nanos));
    if (!started.ok()) return NotFound(name);  // destroyed meanwhile

    const absl::Time give_up = start + absl::Nanoseconds(timeout_nanos) + kShutdownGrace;
    const absl::Time rpc_deadline = absl::FromChrono(ctx->deadline());
    std::vector<int> last_states;
    for (;;) {
      bool still_there = false;
      std::vector<ExecutorSnapshot> now_states = ExecutorsNamed(name, &still_there);
      bool terminated = true;
      for (const Future<void>& f : terminations) terminated = terminated && f.IsDone();
      pb::ShutdownGroupResponse response;
      ExecutorState aggregate = still_there ? Aggregate(now_states) : ExecutorState::kTerminated;
      if (terminated) aggregate = ExecutorState::kTerminated;
      response.set_state(ToProto(aggregate));
      for (const ExecutorSnapshot& e : now_states) response.add_executor_states(ToProto(e.state));
      response.set_elapsed_nanos(absl::ToInt64Nanoseconds(absl::Now() - start));
      const absl::Time now = absl::Now();
      const bool stop = !request->wait() || terminated || now >= give_up ||
                        now + 2 * kShutdownPoll >= rpc_deadline || ctx->IsCancelled() ||
                        Stopping();
      std::vector<int> states(response.executor_states().begin(),
                              response.executor_states().end());
      states.push_back(response.state());
      if (stop) {
        response.set_final(true);
        writer->Write(response);
        return grpc::Status::OK;
      }
      if (states != last_states) {
        if (!writer->Write(response)) return grpc::Status::OK;
        last_states = std::move(states);
      }
      // Wake at once when the last termination future completes.
      if (!terminations.empty()) {
        terminations.back().AwaitFor(kShutdownPoll);
        bool all = true;
        for (const Future<void>& f : terminations) all = all && f.IsDone();
        if (!all) WaitOrStop(ctx, kShutdownPoll);
      } else {
        WaitOrStop(ctx, kShutdownPoll);
      }
    }
  }

  grpc::Status GetProcess(grpc::ServerContext* ctx, const pb::GetProcessRequest*,
                          pb::GetProcessResponse* response) override {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    response->set_pid(getpid());
    response->set_uptime_nanos(absl::ToInt64Nanoseconds(ProcessUptime(started_)));
    response->set_gyre_version(kGyreVersion);
    response->set_thread_count(ThreadCount());
    response->set_group_count(static_cast<int>(ExecutorGroupRegistry::Global().Names().size()));
    response->set_admin_address(address_);
    response->set_read_only(options_.read_only);
    return grpc::Status::OK;
  }

 private:
  grpc::Status Authorize(grpc::ServerContext* ctx) const {
    if (options_.token.empty()) return grpc::Status::OK;
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    if (it == md.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "missing \"authorization: Bearer <token>\" metadata");
    }
    absl::string_view value(it->second.data(), it->second.size());
    const std::string expected = absl::StrCat("Bearer ", options_.token);
    if (!ConstantTimeEquals(value, expected)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid admin token");
    }
    return grpc::Status::OK;
  }

  grpc::Status Threshold(bool has, int64_t nanos, absl::Duration* out) const {
    if (!has) {
      *out = options_.stall_threshold;
      return grpc::Status::OK;
    }
    if (nanos <= 0) {
      return BadArgument(absl::StrCat("stall threshold must be > 0, got ", nanos, "ns"));
    }
    *out = absl::Nanoseconds(nanos);
    return grpc::Status::OK;
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  }

  // Waits `d` (in slices, to notice a cancelled call); false if the call was cancelled
  // or the server is stopping.
  bool WaitOrStop(grpc::ServerContext* ctx, absl::Duration d) {
    const auto until = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(d);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (ctx->IsCancelled()) return false;
      auto slice = std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
      cv_.wait_until(lock, slice);
      if (std::chrono::steady_clock::now() >= until) return !stopping_ && !ctx->IsCancelled();
    }
    return false;
  }

  const AdminServerOptions options_;
  const absl::Time started_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::string unix_path_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
};

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(AdminServerOptions options) {
  if (options.address.empty()) return absl::InvalidArgumentError("admin address is empty");
  if (absl::StartsWith(options.address, "unix:") && options.address.size() == 5) {
    return absl::InvalidArgumentError("admin address \"unix:\" has no path");
  }
  if (!absl::StartsWith(options.address, "unix:") &&
      options.address.find(':') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("admin address \"", options.address, "\" is not HOST:PORT or unix:PATH"));
  }
  for (char c : options.token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError("admin token must be printable ASCII without spaces");
    }
  }
  if (options.token.empty() && !IsLoopbackAddress(options.address)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to serve the admin service on non-loopback address \"", options.address,
        "\" without a token"));
  }
  if (options.stall_threshold <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("stall threshold must be > 0");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  grpc::Status s = impl->Init();
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return std::unique_ptr<AdminServer>(new AdminServer(std::move(impl)));
}

AdminServer::AdminServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AdminServer::~AdminServer() { Shutdown(); }

const std::string& AdminServer::address() const { return impl_->address(); }

void AdminServer::Shutdown() { impl_->Shutdown(); }

}  // namespace gyre
