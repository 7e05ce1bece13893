// gyrectl: the command line for gyre's admin service (tools/admin/admin.proto).
//
//   gyrectl --target=127.0.0.1:7070 groups
//   gyrectl --target=unix:/run/app/admin.sock describe workers --output=json
//   gyrectl watch workers --interval=500ms
//   gyrectl shutdown workers --quiet-period=2s --timeout=15s --wait
//   gyrectl process
//
// Exit codes: 0 ok, 1 RPC or server error (one line on stderr), 2 usage error.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "tools/admin/admin.grpc.pb.h"

namespace {

namespace pb = ::gyre::admin::v1;

constexpr int kOk = 0;
constexpr int kRpcError = 1;
constexpr int kUsage = 2;

const char kUsageText[] =
    "usage: gyrectl [--target=HOST:PORT|unix:PATH] [--token=T] [--output=table|json]\n"
    "               [--timeout=5s] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  groups                      list the live named executor groups\n"
    "  describe GROUP              one group and each of its executors\n"
    "  watch GROUP [--interval=1s] [--count=N]\n"
    "                              live snapshots (a redrawn table on a terminal, one line\n"
    "                              per sample otherwise)\n"
    "  shutdown GROUP [--quiet-period=2s] [--timeout=15s] [--wait]\n"
    "                              graceful shutdown; --wait follows it to TERMINATED\n"
    "  process                     pid, uptime, version, threads\n"
    "\n"
    "--target defaults to $GYRE_ADMIN_TARGET, --token to $GYRE_ADMIN_TOKEN.\n"
    "`gyrectl COMMAND --help` describes one command. Exit: 0 ok, 1 RPC error, 2 usage.\n";

const std::map<std::string, std::string>& CommandHelp() {
  static const auto* help = new std::map<std::string, std::string>{
      {"groups",
       "usage: gyrectl [GLOBAL FLAGS] groups\n"
       "Lists every live named group: name, kind, executors, aggregate state, task totals,\n"
       "registered channels and stalled executors.\n"},
      {"describe",
       "usage: gyrectl [GLOBAL FLAGS] describe GROUP [--stall-threshold=1s]\n"
       "Shows the group and one row per executor: thread, tid, state, pending / scheduled /\n"
       "completed / rejected tasks, busy fraction, channels and I/O vs task time (event\n"
       "loops), the running task's age and whether the loop is stalled.\n"},
      {"watch",
       "usage: gyrectl [GLOBAL FLAGS] watch GROUP [--interval=1s] [--count=N]\n"
       "Streams snapshots every --interval (at least 10ms) until interrupted, N samples\n"
       "were shown, or the group terminates. A redrawn table on a terminal; one line per\n"
       "sample otherwise (one JSON object per line with --output=json).\n"},
      {"shutdown",
       "usage: gyrectl [GLOBAL FLAGS] shutdown GROUP [--quiet-period=2s] [--timeout=15s] "
       "[--wait]\n"
       "Starts graceful shutdown of the group. With --wait, prints each state change\n"
       "until TERMINATED; exits 1 if the group did not terminate in time.\n"},
      {"process",
       "usage: gyrectl [GLOBAL FLAGS] process\n"
       "Shows the process: pid, uptime, gyre version, thread count, groups.\n"},
  };
  return *help;
}

struct UsageError {
  std::string message;
};

struct Options {
  std::string target;
  std::string token;
  std::string output = "table";
  absl::Duration timeout = absl::Seconds(5);
  std::string command;
  std::vector<std::string> args;             // positional, after the command
  std::map<std::string, std::string> flags;  // command flags (name without --)
  bool help = false;
};

bool IsGlobalFlag(const std::string& name) {
  return name == "target" || name == "token" || name == "output" || name == "timeout";
}

absl::Duration ParseDurationFlag(const std::string& name, const std::string& value,
                                 bool allow_zero) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d == absl::InfiniteDuration() ||
      d < absl::ZeroDuration() || (!allow_zero && d == absl::ZeroDuration())) {
    throw UsageError{absl::StrCat("--", name, ": not a ", allow_zero ? "" : "positive ",
                                  "duration: \"", value, "\" (use e.g. 500ms, 2s, 1m)")};
  }
  return d;
}

Options Parse(int argc, char** argv) {
  Options o;
  if (const char* t = std::getenv("GYRE_ADMIN_TARGET")) o.target = t;
  if (const char* t = std::getenv("GYRE_ADMIN_TOKEN")) o.token = t;
  static const std::map<std::string, std::vector<std::string>> kCommandFlags = {
      {"groups", {}},
      {"describe", {"stall-threshold"}},
      {"watch", {"interval", "count", "stall-threshold"}},
      {"shutdown", {"quiet-period", "timeout", "wait"}},
      {"process", {}},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      o.help = true;
      continue;
    }
    if (absl::StartsWith(arg, "--")) {
      std::string name = arg.substr(2), value;
      bool has_value = false;
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const bool boolean = name == "wait";
      // Before the command only global flags; after it, the command's own win
      // (shutdown has its own --timeout).
      bool command_flag = false;
      if (!o.command.empty()) {
        const auto& allowed = kCommandFlags.at(o.command);
        command_flag = std::find(allowed.begin(), allowed.end(), name) != allowed.end();
      }
      if (!command_flag && !IsGlobalFlag(name)) {
        throw UsageError{o.command.empty()
                             ? absl::StrCat("unknown flag --", name)
                             : absl::StrCat("unknown flag --", name, " for ", o.command)};
      }
      if (!has_value && !boolean) {
        if (i + 1 >= argc) throw UsageError{absl::StrCat("--", name, " needs a value")};
        value = argv[++i];
      }
      if (boolean && !has_value) value = "true";
      if (command_flag) {
        o.flags[name] = value;
      } else if (name == "target") {
        o.target = value;
      } else if (name == "token") {
        o.token = value;
      } else if (name == "output") {
        if (value != "table" && value != "json") {
          throw UsageError{absl::StrCat("--output must be table or json, got \"", value, "\"")};
        }
        o.output = value;
      } else if (name == "timeout") {
        o.timeout = ParseDurationFlag(name, value, /*allow_zero=*/false);
      }
      continue;
    }
    if (o.command.empty()) {
      if (kCommandFlags.find(arg) == kCommandFlags.end()) {
        throw UsageError{absl::StrCat("unknown command \"", arg, "\"")};
      }
      o.command = arg;
    } else {
      o.args.push_back(arg);
    }
  }
  return o;
}

std::string StateName(int s) {
  std::string n = pb::ExecutorState_Name(static_cast<pb::ExecutorState>(s));
  return absl::StartsWith(n, "EXECUTOR_STATE_") ? n.substr(15) : n;
}

std::string KindName(pb::GroupKind k) {
  std::string n = pb::GroupKind_Name(k);
  std::string s = absl::StartsWith(n, "GROUP_KIND_") ? n.substr(11) : n;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Dur(int64_t nanos) {
  if (nanos < 1'000'000) return absl::StrCat(nanos / 1000, "us");
  if (nanos < 10'000'000'000) return absl::StrFormat("%.1fms", static_cast<double>(nanos) / 1e6);
  return absl::StrFormat("%.1fs", static_cast<double>(nanos) / 1e9);
}

// 0 B, 512 B, 64 KiB, 1.5 MiB, 2.0 GiB.
std::string Bytes(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  if (n < (uint64_t{1} << 20)) return absl::StrCat(n >> 10, " KiB");
  if (n < (uint64_t{1} << 30)) {
    return absl::StrFormat("%.1f MiB", static_cast<double>(n) / (1 << 20));
  }
  return absl::StrFormat("%.1f GiB", static_cast<double>(n) / (1 << 30));
}

// Columns aligned to their widest cell; numbers right-aligned.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return;
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      bool numeric = !r[c].empty() && (std::isdigit(static_cast<unsigned char>(r[c][0])) != 0);
      std::string pad(width[c] - r[c].size(), ' ');
      line += numeric && &r != &rows[0] ? pad + r[c] : r[c] + pad;
      if (c + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::printf("%s\n", line.c_str());
  }
}

std::string Json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, opts);
  return out;
}

void PrintGroups(const pb::ListGroupsResponse& r) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "KIND", "EXECUTORS", "STATE", "PENDING",
                                                 "SCHEDULED", "COMPLETED", "REJECTED", "CHANNELS",
                                                 "STALLED"}};
  for (const pb::Group& g : r.groups()) {
    rows.push_back({g.name(), KindName(g.kind()), absl::StrCat(g.executor_count()),
                    StateName(g.state()), absl::StrCat(g.pending_tasks()),
                    absl::StrCat(g.scheduled_tasks()), absl::StrCat(g.completed_tasks()),
                    absl::StrCat(g.rejected_tasks()), absl::StrCat(g.registered_channels()),
                    absl::StrCat(g.stalled_executors())});
  }
  PrintTable(rows);
}

void PrintGroupDetail(const pb::Group& g) {
  std::printf("group %s: %s, %s, %d executor%s, chooser %s\n", g.name().c_str(),
              StateName(g.state()).c_str(), KindName(g.kind()).c_str(), g.executor_count(),
              g.executor_count() == 1 ? "" : "s", g.chooser().c_str());
  std::printf("totals: pending %llu, scheduled %llu, completed %llu, rejected %llu, channels %d, "
              "stalled %d, timer memory %s\n",
              static_cast<unsigned long long>(g.pending_tasks()),
              static_cast<unsigned long long>(g.scheduled_tasks()),
              static_cast<unsigned long long>(g.completed_tasks()),
              static_cast<unsigned long long>(g.rejected_tasks()), g.registered_channels(),
              g.stalled_executors(), Bytes(g.timer_memory_bytes()).c_str());
  std::vector<std::vector<std::string>> rows = {{"#", "THREAD", "TID", "STATE", "PENDING", "SCHED",
                                                 "COMPLETED", "REJECTED", "BUSY", "CHANNELS", "IO",
                                                 "TASKS", "RUNNING", "STALLED"}};
  for (const pb::Executor& x : g.executors()) {
    rows.push_back(
        {absl::StrCat(x.index()), x.thread_name().empty() ? "-" : x.thread_name(),
         x.os_tid() == 0 ? "-" : absl::StrCat(x.os_tid()), StateName(x.state()),
         absl::StrCat(x.pending_tasks()), absl::StrCat(x.scheduled_tasks()),
         absl::StrCat(x.completed_tasks()), absl::StrCat(x.rejected_tasks()),
         absl::StrFormat("%.1f%%", x.busy_fraction() * 100),
         x.event_loop() ? absl::StrCat(x.registered_channels()) : "-",
         x.event_loop() ? Dur(x.io_nanos()) : "-", Dur(x.task_nanos()),
         x.running_task() ? Dur(x.running_task_age_nanos()) : "-",
         x.stalled() ? "STALLED" : "no"});
  }
  PrintTable(rows);
}

std::string OneLine(const pb::Group& g, int64_t unix_nanos) {
  double busy = 0;
  for (const pb::Executor& x : g.executors()) busy += x.busy_fraction();
  if (g.executors_size() > 0) busy /= g.executors_size();
  return absl::StrCat(absl::FormatTime("%H:%M:%E3S", absl::FromUnixNanos(unix_nanos),
                                       absl::LocalTimeZone()),
                      " ", g.name(), " ", StateName(g.state()), " pending=", g.pending_tasks(),
                      " scheduled=", g.scheduled_tasks(), " completed=", g.completed_tasks(),
                      " rejected=", g.rejected_tasks(), " busy=", absl::StrFormat("%.1f%%", busy * 100),
                      " channels=", g.registered_channels(), " stalled=", g.stalled_executors());
}

class Cli {
 public:
  explicit Cli(Options o) : o_(std::move(o)) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
    stub_ = pb::Admin::NewStub(
        grpc::CreateCustomChannel(o_.target, grpc::InsecureChannelCredentials(), args));
  }

  int Run() {
    const std::string& c = o_.command;
    if (c == "groups") return Groups();
    if (c == "describe") return Describe();
    if (c == "watch") return Watch();
    if (c == "shutdown") return Shutdown();
    return Process();
  }

 private:
  std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration deadline) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (deadline != absl::InfiniteDuration()) {
      ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
    }
    if (!o_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + o_.token);
    return ctx;
  }

  int Fail(const grpc::Status& s) {
    std::string msg = absl::StrReplaceAll(s.error_message(), {{"\n", " "}});
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      std::fprintf(stderr, "gyrectl: cannot reach the admin server at %s: %s\n",
                   o_.target.c_str(), msg.c_str());
    } else if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      std::fprintf(stderr, "gyrectl: no answer from the admin server at %s within %s\n",
                   o_.target.c_str(), absl::FormatDuration(o_.timeout).c_str());
    } else {
      std::fprintf(stderr, "gyrectl: %s: %s: %s\n", o_.command.c_str(),
                   StatusCodeName(s.error_code()), msg.c_str());
    }
    return kRpcError;
  }

  static const char* StatusCodeName(grpc::StatusCode c) {
    switch (c) {
      case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
      case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
      case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
      case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
      case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
      case grpc::StatusCode::CANCELLED: return "CANCELLED";
      case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
      case grpc::StatusCode::INTERNAL: return "INTERNAL";
      default: return "ERROR";
    }
  }

  bool Json() const { return o_.output == "json"; }

  const std::string& Group() {
    if (o_.args.size() != 1) {
      throw UsageError{absl::StrCat(o_.command, " takes exactly one GROUP")};
    }
    return o_.args[0];
  }

  void NoArgs() {
    if (!o_.args.empty()) throw UsageError{absl::StrCat(o_.command, " takes no arguments")};
  }

  std::string Flag(const std::string& name, const std::string& fallback) {
    auto it = o_.flags.find(name);
    return it == o_.flags.end() ? fallback : it->second;
  }

  // Calls the unary `method` with `req`, then prints its response: as JSON with --json,
  // otherwise with `print`. Returns the exit code.
  template <typename Req, typename Resp, typename Print>
  int Call(grpc::Status (pb::Admin::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
           const Req& req, Print print) {
    Resp r;
    auto ctx = Ctx(o_.timeout);
    grpc::Status s = (stub_.get()->*method)(ctx.get(), req, &r);
    if (!s.ok()) return Fail(s);
    if (Json()) {
      std::printf("%s\n", ::Json(r).c_str());
    } else {
      print(r);
    }
    return kOk;
  }

  int Groups() {
    NoArgs();
    return Call(&pb::Admin::Stub::ListGroups, pb::ListGroupsRequest(), PrintGroups);
  }

  int Describe() {
    pb::GetGroupRequest req;
    req.set_name(Group());
    if (o_.flags.count("stall-threshold") != 0) {
      req.set_stall_threshold_nanos(absl::ToInt64Nanoseconds(
          ParseDurationFlag("stall-threshold", o_.flags["stall-threshold"], false)));
    }
    return Call(&pb::Admin::Stub::GetGroup, req,
                [](const pb::GetGroupResponse& r) { PrintGroupDetail(r.group()); });
  }

  int Watch() {
    pb::WatchGroupRequest req;
    req.set_name(Group());
    req.set_interval_nanos(
        absl::ToInt64Nanoseconds(ParseDurationFlag("interval", Flag("interval", "1s"), false)));
    if (o_.flags.count("count") != 0) {
      int n = 0;
      if (!absl::SimpleAtoi(o_.flags["count"], &n) || n <= 0) {
        throw UsageError{absl::StrCat("--count must be a positive integer, got \"",
                                      o_.flags["count"], "\"")};
      }
      req.set_max_samples(n);
    }
    if (o_.flags.count("stall-threshold") != 0) {
      req.set_stall_threshold_nanos(absl::ToInt64Nanoseconds(
          ParseDurationFlag("stall-threshold", o_.flags["stall-threshold"], false)));
    }
    const bool tty = isatty(STDOUT_FILENO) == 1 && !Json();
    auto ctx = Ctx(absl::InfiniteDuration());  // runs until interrupted
    auto reader = stub_->WatchGroup(ctx.get(), req);
    pb::WatchGroupResponse r;
    while (reader->Read(&r)) {
      if (Json()) {
        std::printf("%s\n", ::Json(r).c_str());
      } else if (tty) {
        std::printf("\033[H\033[2J");
        std::printf("%s  (every %s, Ctrl-C to stop)\n\n",
                    absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(r.sampled_at_unix_nanos()),
                                     absl::LocalTimeZone())
                        .c_str(),
                    Flag("interval", "1s").c_str());
        PrintGroupDetail(r.group());
      } else {
        std::printf("%s\n", OneLine(r.group(), r.sampled_at_unix_nanos()).c_str());
      }
      std::fflush(stdout);
    }
    grpc::Status s = reader->Finish();
    return s.ok() ? kOk : Fail(s);
  }

  int Shutdown() {
    pb::ShutdownGroupRequest req;
    req.set_name(Group());
    absl::Duration quiet = ParseDurationFlag("quiet-period", Flag("quiet-period", "2s"), true);
    absl::Duration timeout = ParseDurationFlag("timeout", Flag("timeout", "15s"), true);
    if (quiet > timeout) {
      throw UsageError{"--quiet-period must not be longer than --timeout"};
    }
    const bool wait = Flag("wait", "false") == "true" || Flag("wait", "false") == "1";
    req.set_quiet_period_nanos(absl::ToInt64Nanoseconds(quiet));
    req.set_timeout_nanos(absl::ToInt64Nanoseconds(timeout));
    req.set_wait(wait);
    auto ctx = Ctx(wait ? std::max(o_.timeout, timeout + absl::Seconds(10)) : o_.timeout);
    auto reader = stub_->ShutdownGroup(ctx.get(), req);
    pb::ShutdownGroupResponse r, last;
    bool any = false;
    while (reader->Read(&r)) {
      any = true;
      last = r;
      if (Json()) {
        std::printf("%s\n", ::Json(r).c_str());
      } else {
        std::vector<std::string> each;
        for (int s : r.executor_states()) each.push_back(StateName(s));
        std::printf("%s: %-13s [%s] +%s\n", req.name().c_str(), StateName(r.state()).c_str(),
                    absl::StrJoin(each, " ").c_str(), Dur(r.elapsed_nanos()).c_str());
      }
      std::fflush(stdout);
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) return Fail(s);
    if (!any) {
      std::fprintf(stderr, "gyrectl: shutdown: the server sent no state\n");
      return kRpcError;
    }
    if (wait && last.state() != pb::EXECUTOR_STATE_TERMINATED) {
      std::fprintf(stderr, "gyrectl: shutdown: %s did not terminate (still %s after %s)\n",
                   req.name().c_str(), StateName(last.state()).c_str(),
                   Dur(last.elapsed_nanos()).c_str());
      return kRpcError;
    }
    if (!Json()) {
      if (wait) {
        std::printf("%s: terminated after %s\n", req.name().c_str(), Dur(last.elapsed_nanos()).c_str());
      } else {
        std::printf("%s: shutdown started (quiet period %s, timeout %s)\n", req.name().c_str(),
                    absl::FormatDuration(quiet).c_str(), absl::FormatDuration(timeout).c_str());
      }
    }
    return kOk;
  }

  int Process() {
    NoArgs();
    return Call(&pb::Admin::Stub::GetProcess, pb::GetProcessRequest(), PrintProcess);
  }

  static void PrintProcess(const pb::GetProcessResponse& r) {
    PrintTable({{"pid", absl::StrCat(r.pid())},
                {"uptime", absl::FormatDuration(absl::Trunc(absl::Nanoseconds(r.uptime_nanos()),
                                                            absl::Milliseconds(1)))},
                {"gyre_version", r.gyre_version()},
                {"threads", absl::StrCat(r.thread_count())},
                {"groups", absl::StrCat(r.group_count())},
                {"admin_address", r.admin_address()},
                {"read_only", r.read_only() ? "true" : "false"}});
  }

  Options o_;
  std::unique_ptr<pb::Admin::Stub> stub_;
};

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = Parse(argc, argv);
    if (o.help) {
      if (o.command.empty()) {
        std::printf("%s", kUsageText);
      } else {
        std::printf("%s", CommandHelp().at(o.command).c_str());
      }
      return kOk;
    }
    if (o.command.empty()) throw UsageError{"no command given"};
    if (o.target.empty()) throw UsageError{"no --target given (or set $GYRE_ADMIN_TARGET)"};
    return Cli(std::move(o)).Run();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gyrectl: %s\n%s", e.message.c_str(), kUsageText);
    return kUsage;
  }
}
