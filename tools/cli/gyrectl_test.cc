// gyrectl run as a subprocess against an admin server in this test process.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/tools/admin/admin_server.h"

namespace gyre {
namespace {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Gyrectl() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir != nullptr ? srcdir : ".", "/", workspace != nullptr ? workspace : "gyre",
                      "/tools/cli/gyrectl");
}

// Runs `gyrectl ARGS` with stdout and stderr captured (not a terminal).
CliRun RunGyrectl(const std::string& args, const std::string& env = "") {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = tmp != nullptr ? tmp : "/tmp";
  std::string out = dir + "/gyrectl.out", err = dir + "/gyrectl.err";
  std::string cmd = absl::StrCat("env -u GYRE_ADMIN_TOKEN -u GYRE_ADMIN_TARGET ", env, " ",
                                 Gyrectl(), " ", args, " >", out, " 2>", err, " </dev/null");
  int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

std::vector<std::string> Lines(const std::string& s) {
  return absl::StrSplit(s, '\n', absl::SkipEmpty());
}

class GyrectlTest : public ::testing::Test {
 protected:
  void StartServer(AdminServerOptions o = {}) {
    auto s = AdminServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    target_ = "--target=" + server_->address();
  }
  std::unique_ptr<DefaultEventExecutorGroup> MakeGroup(const std::string& name, int n) {
    GroupOptions o;
    o.name = name;
    auto g = DefaultEventExecutorGroup::Create(n, o);
    if (!g.ok()) {
      ADD_FAILURE() << "group " << name << ": " << g.status();
      return nullptr;
    }
    return *std::move(g);
  }
  // `gyrectl --target=<this server> ARGS`.
  CliRun Run(const std::string& args, const std::string& env = "") {
    return RunGyrectl(target_ + " " + args, env);
  }
  // The same, expected to succeed (exit code 0; the failure shows stderr).
  CliRun RunOk(const std::string& args) {
    CliRun r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << "gyrectl " << args << ": " << r.err << r.out;
    return r;
  }

  std::unique_ptr<AdminServer> server_;
  std::string target_;
};

TEST_F(GyrectlTest, GroupsTableAndJson) {
  StartServer();
  auto group = MakeGroup("cli-groups", 2);
  CliRun r = RunOk("groups");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(lines[0], "NAME")) << r.out;
  bool found = false;
  for (const std::string& l : lines) {
    if (!absl::StartsWith(l, "cli-groups ")) continue;
    found = true;
    EXPECT_TRUE(absl::StrContains(l, "executor")) << l;
    EXPECT_TRUE(absl::StrContains(l, "NOT_STARTED")) << l;
    // Aligned: the STATE column starts at the same offset as in the header.
    EXPECT_EQ(l.find("NOT_STARTED"), lines[0].find("STATE")) << r.out;
  }
  EXPECT_TRUE(found) << r.out;

  r = RunOk("--output=json groups");
  EXPECT_TRUE(absl::StrContains(r.out, "\"name\":\"cli-groups\"")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\"executor_count\":2")) << r.out;
}

TEST_F(GyrectlTest, DescribeShowsExecutorsAndMovingNumbers) {
  StartServer();
  auto group = MakeGroup("cli-describe", 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(group->Submit([] { return 0; }).Sync().ok());
  CliRun r;
  for (int attempt = 0; attempt < 100; ++attempt) {  // counters publish per batch
    r = Run("describe cli-describe");
    if (absl::StrContains(r.out, "completed 3,")) break;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "group cli-describe: STARTED, executor, 1 executor"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "completed 3,")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, ", timer memory 0 B\n")) << r.out;  // no timer yet
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;  // two summary lines, header, one executor
  EXPECT_TRUE(absl::StartsWith(lines[2], "#  THREAD")) << r.out;
  EXPECT_TRUE(absl::StrContains(lines[3], "cli-describe")) << r.out;  // the thread name

  r = RunOk("describe cli-describe --output=json");
  EXPECT_TRUE(absl::StrContains(r.out, "\"completed_tasks\":\"3\"")) << r.out;

  r = Run("describe no-such-group");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "NOT_FOUND")) << r.err;
}

TEST_F(GyrectlTest, WatchPrintsOneLinePerSampleWhenNotATerminal) {
  StartServer();
  auto group = MakeGroup("cli-watch", 1);
  CliRun r = RunOk("watch cli-watch --interval=10ms --count=3");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const std::string& l : lines) {
    EXPECT_TRUE(absl::StrContains(l, " cli-watch NOT_STARTED pending=0")) << l;
  }
  r = RunOk("--output=json watch cli-watch --interval=10ms --count=2");
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;
  EXPECT_TRUE(absl::StartsWith(r.out, "{\"group\":")) << r.out;
}

TEST_F(GyrectlTest, ShutdownWaitShowsStatesToTerminated) {
  StartServer();
  auto group = MakeGroup("cli-shutdown", 2);
  ASSERT_TRUE(group->Submit([] { return 0; }).Sync().ok());
  CliRun r = RunOk("shutdown cli-shutdown --quiet-period=50ms --timeout=5s --wait");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 2u) << r.out;
  EXPECT_TRUE(absl::StartsWith(lines[0], "cli-shutdown: SHUTTING_DOWN")) << r.out;
  EXPECT_TRUE(absl::StrContains(lines[lines.size() - 2], "TERMINATED")) << r.out;
  EXPECT_TRUE(absl::StartsWith(lines.back(), "cli-shutdown: terminated after")) << r.out;
  EXPECT_TRUE(group->IsTerminated());

  r = Run("shutdown cli-shutdown --wait");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "FAILED_PRECONDITION")) << r.err;
}

TEST_F(GyrectlTest, ProcessShowsThisProcess) {
  StartServer();
  CliRun r = RunOk("process");
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(absl::StartsWith(lines[0], "pid ")) << r.out;
  EXPECT_TRUE(absl::EndsWith(lines[0], absl::StrCat(" ", getpid()))) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, kGyreVersion)) << r.out;
  r = RunOk("process --output=json");
  EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("\"pid\":\"", getpid(), "\""))) << r.out;
}

TEST_F(GyrectlTest, TokenAndReadOnly) {
  AdminServerOptions o;
  o.token = "tok-123";
  o.read_only = true;
  StartServer(o);
  auto group = MakeGroup("cli-token", 1);
  CliRun r = Run("groups");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "UNAUTHENTICATED")) << r.err;
  r = Run("groups", "GYRE_ADMIN_TOKEN=tok-123");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Run("--token=tok-123 shutdown cli-token");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "PERMISSION_DENIED")) << r.err;
  EXPECT_FALSE(group->IsShuttingDown());
}

TEST_F(GyrectlTest, UnreachableServerIsOneLineExitOne) {
  // Port 1 on loopback: nothing listens there (connection refused).
  CliRun r = RunGyrectl("--target=127.0.0.1:1 --timeout=3s groups");
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_EQ(Lines(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(absl::StartsWith(r.err, "gyrectl: cannot reach the admin server at 127.0.0.1:1"))
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(GyrectlTest, UsageErrorsExitTwo) {
  const char* bad[] = {
      "",                                         // no command
      "--target=127.0.0.1:1 frobnicate",          // unknown command
      "--target=127.0.0.1:1 --output=xml groups", // bad output
      "--target=127.0.0.1:1 describe",            // missing GROUP
      "--target=127.0.0.1:1 --timeout=soon groups",
      "--target=127.0.0.1:1 watch g --interval=0s",
      "--target=127.0.0.1:1 shutdown g --quiet-period=5s --timeout=1s",
      "--target=127.0.0.1:1 groups --interval=1s",  // flag of another command
      "groups",                                   // no target
  };
  for (const char* args : bad) {
    CliRun r = RunGyrectl(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_TRUE(absl::StartsWith(r.err, "gyrectl: ")) << args << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, "usage: gyrectl")) << args;
  }
  for (const char* cmd : {"groups", "describe", "watch", "shutdown", "process"}) {
    CliRun r = RunGyrectl(absl::StrCat(cmd, " --help"));
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_TRUE(absl::StartsWith(r.out, absl::StrCat("usage: gyrectl [GLOBAL FLAGS] ", cmd)))
        << r.out;
  }
  CliRun r = RunGyrectl("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(r.out, "commands:"));
}

}  // namespace
}  // namespace gyre
