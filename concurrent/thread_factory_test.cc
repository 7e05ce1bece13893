#include "gyre/concurrent/thread_factory.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "gyre/concurrent/event_executor_chooser.h"
#include "gyre/concurrent/fast_thread_local.h"
#include "gyre/concurrent/thread_per_task_executor.h"

namespace gyre {
namespace {

std::string CommOf(int tid) {
  std::ifstream in(absl::StrCat("/proc/self/task/", tid, "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

// B75: <pool>-<poolId>-<threadId>, visible to the OS (truncated to 15 characters).
TEST(DefaultThreadFactoryTest, NamesThreadsForTheOs) {
  DefaultThreadFactory a("pool");
  DefaultThreadFactory b("pool");
  EXPECT_NE(a.prefix(), b.prefix());  // one pool id per factory
  for (int i = 1; i <= 2; ++i) {
    std::string seen;
    auto t = a.NewThread([&] { seen = CommOf(internal::CurrentOsThreadId()); });
    ASSERT_TRUE(t.ok());
    EXPECT_EQ((*t)->name(), absl::StrCat(a.prefix(), i));
    (*t)->Join();
    EXPECT_EQ(seen, (*t)->name());
  }
  DefaultThreadFactory longer("averyveryverylongpoolname");
  std::string seen;
  auto t = longer.NewThread([&] { seen = CommOf(internal::CurrentOsThreadId()); });
  ASSERT_TRUE(t.ok());
  (*t)->Join();
  EXPECT_EQ(seen, (*t)->name().substr(0, 15));
}

TEST(DefaultThreadFactoryTest, ToPoolNameFollowsNetty) {
  EXPECT_EQ(ToPoolName("NioEventLoopGroup"), "nioEventLoopGroup");
  EXPECT_EQ(ToPoolName("gyre::DefaultEventExecutorGroup"), "defaultEventExecutorGroup");
  EXPECT_EQ(ToPoolName("IOPool"), "IOPool");
  EXPECT_EQ(ToPoolName("X"), "x");
  EXPECT_EQ(ToPoolName(""), "unknown");
}

// B76: an out-of-range priority is an error, not a crash.
TEST(DefaultThreadFactoryTest, RejectsOutOfRangeNice) {
  DefaultThreadFactory f("nice", ThreadOptions{.nice = 40});
  auto t = f.NewThread([] {});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  DefaultThreadFactory ok("nice", ThreadOptions{.nice = 5});
  auto u = ok.NewThread([] {});
  ASSERT_TRUE(u.ok());
  (*u)->Join();
}

// B118: one new thread per task; joined on destruction.
TEST(ThreadPerTaskExecutorTest, RunsEachTaskOnANewThread) {
  DefaultThreadFactory factory("tpt");
  std::vector<std::thread::id> ids(3);
  {
    ThreadPerTaskExecutor executor(&factory);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(executor.Execute([&ids, i] { ids[i] = std::this_thread::get_id(); }).ok());
    }
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
  EXPECT_NE(ids[0], std::this_thread::get_id());
  ThreadPerTaskExecutor null_factory(nullptr);
  EXPECT_EQ(null_factory.Execute([] {}).code(), absl::StatusCode::kInvalidArgument);
}

struct Tracked {
  explicit Tracked(std::atomic<int>* d) : destroyed(d) {}
  Tracked(Tracked&& o) noexcept : destroyed(std::exchange(o.destroyed, nullptr)) {}
  ~Tracked() {
    if (destroyed != nullptr) destroyed->fetch_add(1);
  }
  std::atomic<int>* destroyed;
};

// B77/B82: values of a gyre thread are destroyed, on that thread, when it exits.
TEST(FastThreadLocalTest, ValuesDieWithTheirGyreThread) {
  std::atomic<int> destroyed{0};
  FastThreadLocal<Tracked> tl([&destroyed] { return Tracked(&destroyed); });
  DefaultThreadFactory factory("ftl");
  auto t = factory.NewThread([&] {
    tl.Get();
    EXPECT_TRUE(tl.IsSet());
  });
  ASSERT_TRUE(t.ok());
  (*t)->Join();
  EXPECT_EQ(destroyed.load(), 1);
}

// B79/B80/B81.
TEST(FastThreadLocalTest, SetRemoveAndRemoveAll) {
  FastThreadLocal<int> a;
  FastThreadLocal<std::string> b([] { return std::string("init"); });
  EXPECT_FALSE(a.IsSet());
  EXPECT_EQ(a.GetIfSet(), nullptr);
  EXPECT_EQ(b.Get(), "init");
  a.Set(7);
  EXPECT_EQ(a.Get(), 7);
  size_t before = FastThreadLocal<int>::Size();
  for (int i = 0; i < 100; ++i) {
    a.Set(i);
    a.Remove();
  }
  EXPECT_FALSE(a.IsSet());
  EXPECT_EQ(FastThreadLocal<int>::Size(), before - 1);
  a.Set(1);
  FastThreadLocal<int>::RemoveAll();
  EXPECT_FALSE(a.IsSet());
  EXPECT_FALSE(b.IsSet());
  EXPECT_EQ(FastThreadLocal<int>::Size(), 0u);
}

// B85: Size() counts the values set on the calling thread: constructing a variable adds
// none, the first Get() or Set() adds one, setting again adds none, and another
// thread's values are its own (a fresh thread starts at zero).
TEST(FastThreadLocalTest, SizeCountsThisThreadsValuesB85) {
  FastThreadLocal<int>::RemoveAll();
  const size_t empty = FastThreadLocal<int>::Size();
  EXPECT_EQ(empty, 0u);
  FastThreadLocal<int> a;
  FastThreadLocal<std::string> b;
  EXPECT_EQ(FastThreadLocal<int>::Size(), 0u);
  a.Get();
  EXPECT_EQ(FastThreadLocal<int>::Size(), 1u);
  a.Set(3);
  EXPECT_EQ(FastThreadLocal<int>::Size(), 1u);
  b.Set("x");
  EXPECT_EQ(FastThreadLocal<int>::Size(), 2u);
  size_t on_other_thread = 99;
  std::thread([&] { on_other_thread = FastThreadLocal<int>::Size(); }).join();
  EXPECT_EQ(on_other_thread, 0u);
  b.Remove();
  EXPECT_EQ(FastThreadLocal<int>::Size(), 1u);
  FastThreadLocal<int>::RemoveAll();
  EXPECT_EQ(FastThreadLocal<int>::Size(), 0u);
}

// B116: mask for powers of two, modulo otherwise; round-robin and in range past the
// counter's wrap.
TEST(ChooserTest, DefaultFactoryPicksByCount) {
  std::vector<EventExecutor*> four(4), three(3);
  for (int i = 0; i < 4; ++i) four[i] = reinterpret_cast<EventExecutor*>(0x1000 + 16 * i);
  for (int i = 0; i < 3; ++i) three[i] = four[i];
  auto* f = DefaultEventExecutorChooserFactory::Instance();
  auto c4 = f->NewChooser(four);
  auto c3 = f->NewChooser(three);
  EXPECT_NE(dynamic_cast<PowerOfTwoEventExecutorChooser*>(c4.get()), nullptr);
  EXPECT_NE(dynamic_cast<GenericEventExecutorChooser*>(c3.get()), nullptr);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(c4->Next(), four[i % 4]);
    EXPECT_EQ(c3->Next(), three[i % 3]);
  }
}

TEST(ChooserTest, CountersWrapSafely) {
  std::vector<EventExecutor*> four(4), three(3);
  for (int i = 0; i < 4; ++i) four[i] = reinterpret_cast<EventExecutor*>(0x1000 + 16 * i);
  for (int i = 0; i < 3; ++i) three[i] = four[i];
  PowerOfTwoEventExecutorChooser p(four, UINT64_MAX - 5);
  // Strict round-robin across the wrap: 2^64 is a multiple of 4.
  EventExecutor* prev = p.Next();
  for (int i = 0; i < 20; ++i) {
    EventExecutor* next = p.Next();
    size_t pi = std::find(four.begin(), four.end(), prev) - four.begin();
    EXPECT_EQ(next, four[(pi + 1) % 4]);
    prev = next;
  }
  GenericEventExecutorChooser g(three, UINT64_MAX - 5);
  for (int i = 0; i < 20; ++i) {
    EventExecutor* e = g.Next();
    EXPECT_NE(std::find(three.begin(), three.end(), e), three.end());
  }
}

}  // namespace
}  // namespace gyre
