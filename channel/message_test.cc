#include "gyre/channel/message.h"

#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace gyre {
namespace {

struct Big {
  char bytes[200];
  int tag;
};

struct Counted {
  static inline int live = 0;
  explicit Counted(int v) : value(v) { ++live; }
  Counted(Counted&& o) noexcept : value(o.value) { ++live; }
  ~Counted() { --live; }
  int value;
};

TEST(MessageTest, HoldsAndTypeChecks) {
  Message m = std::string("hello");
  EXPECT_FALSE(m.empty());
  EXPECT_TRUE(m.Is<std::string>());
  EXPECT_FALSE(m.Is<int>());
  EXPECT_EQ(m.Get<int>(), nullptr);
  ASSERT_NE(m.Get<std::string>(), nullptr);
  EXPECT_EQ(*m.Get<std::string>(), "hello");
}

TEST(MessageTest, TakeMovesOutOrLeavesUnchanged) {
  Message m = std::make_unique<int>(5);
  std::optional<int> wrong = std::move(m).Take<int>();
  EXPECT_FALSE(wrong.has_value());
  EXPECT_FALSE(m.empty());
  std::optional<std::unique_ptr<int>> right = std::move(m).Take<std::unique_ptr<int>>();
  ASSERT_TRUE(right.has_value());
  EXPECT_EQ(**right, 5);
  EXPECT_TRUE(m.empty());
}

TEST(MessageTest, LargeValuesAreBoxedAndMoveCheaply) {
  Big b{};
  b.tag = 9;
  Message m = b;
  Message n = std::move(m);
  EXPECT_TRUE(m.empty());
  ASSERT_TRUE(n.Is<Big>());
  EXPECT_EQ(n.Get<Big>()->tag, 9);
}

TEST(MessageTest, DestroysExactlyOnce) {
  {
    Message m = Counted(1);
    EXPECT_EQ(Counted::live, 1);
    Message n = std::move(m);
    EXPECT_EQ(Counted::live, 1);
    std::vector<Message> v;
    v.push_back(std::move(n));
    v.emplace_back(Counted(2));
    EXPECT_EQ(Counted::live, 2);
  }
  EXPECT_EQ(Counted::live, 0);
  Message r = Counted(3);
  r.Reset();
  EXPECT_EQ(Counted::live, 0);
  EXPECT_TRUE(r.empty());
}

// A type that declares itself trivially relocatable: a Message moves it by copying its
// bytes, so neither its move constructor nor its destructor runs on a Message move.
struct Relocatable {
  using IsTriviallyRelocatable = std::true_type;
  static inline int moves = 0;
  static inline int destroyed = 0;
  explicit Relocatable(int v) : value(v) {}
  Relocatable(Relocatable&& o) noexcept : value(o.value) { ++moves; }
  ~Relocatable() { ++destroyed; }
  int value;
};

TEST(MessageTest, TriviallyRelocatableValuesMoveByTheirBytes) {
  int destroyed = 0;
  {
    Message m = Relocatable(7);
    const int moves = Relocatable::moves;
    destroyed = Relocatable::destroyed;
    Message n = std::move(m);
    Message o;
    o = std::move(n);
    EXPECT_EQ(Relocatable::moves, moves);
    EXPECT_EQ(Relocatable::destroyed, destroyed);
    EXPECT_TRUE(m.empty());
    EXPECT_TRUE(n.empty());
    ASSERT_TRUE(o.Is<Relocatable>());
    EXPECT_EQ(o.Get<Relocatable>()->value, 7);
  }
  EXPECT_EQ(Relocatable::destroyed, destroyed + 1) << "destroyed once, by its last holder";
}

TEST(MessageTest, SmartPointersMoveByTheirBytes) {
  static_assert(internal::kTriviallyRelocatable<std::shared_ptr<int>>);
  static_assert(internal::kTriviallyRelocatable<std::unique_ptr<int>>);
  auto shared = std::make_shared<int>(3);
  Message m = shared;
  Message n = std::move(m);
  EXPECT_EQ(shared.use_count(), 2) << "moved, not copied";
  ASSERT_TRUE(n.Is<std::shared_ptr<int>>());
  EXPECT_EQ(**n.Get<std::shared_ptr<int>>(), 3);
  n.Reset();
  EXPECT_EQ(shared.use_count(), 1) << "released once";
}

TEST(MessageTest, SelfReferencingValuesMoveThroughTheirMoveConstructor) {
  // A short std::string points into itself: copying its bytes would leave the copy
  // pointing into the source. It is neither trivially copyable nor declared relocatable.
  static_assert(!internal::kTriviallyRelocatable<std::string>);
  Message m = std::string("short");
  for (int i = 0; i < 4; ++i) {
    Message n = std::move(m);
    m = std::move(n);
  }
  ASSERT_TRUE(m.Is<std::string>());
  EXPECT_EQ(*m.Get<std::string>(), "short");
  // Its characters are still inside the string object that now holds them.
  const char* object = reinterpret_cast<const char*>(m.Get<std::string>());
  const char* chars = m.Get<std::string>()->data();
  EXPECT_TRUE(chars >= object && chars < object + sizeof(std::string));
}

// Boxed values come from a per-thread block cache; a box freed on another thread than
// the one that made it joins that thread's cache. Values stay intact, each is destroyed
// once, and boxes of every size class (and beyond the largest) are handled.
struct Huge {
  char bytes[1000];
  int tag;
};

TEST(MessageTest, BoxesMadeOnOneThreadAndFreedOnAnother) {
  constexpr int kRounds = 2000;
  std::vector<Message> made;
  made.reserve(3 * kRounds);
  for (int i = 0; i < kRounds; ++i) {
    Big b{};
    b.tag = i;
    made.emplace_back(b);
    Huge h{};
    h.tag = -i;
    made.emplace_back(h);
    made.emplace_back(std::make_pair(Counted(i), std::string(40, 'x')));
  }
  EXPECT_EQ(Counted::live, kRounds);
  std::thread other([&made] {
    for (size_t i = 0; i < made.size(); i += 3) {
      const int round = static_cast<int>(i / 3);
      ASSERT_EQ(made[i].Get<Big>()->tag, round);
      ASSERT_EQ(made[i + 1].Get<Huge>()->tag, -round);
      made[i].Reset();
      made[i + 1].Reset();
      made[i + 2].Reset();
    }
    // Reuse this thread's cached blocks.
    for (int i = 0; i < kRounds; ++i) {
      Big b{};
      b.tag = i;
      Message m = b;
      ASSERT_EQ(m.Get<Big>()->tag, i);
    }
  });
  other.join();
  EXPECT_EQ(Counted::live, 0);
}

TEST(MessageTest, TypeNameForDiagnostics) {
  Message m = 42;
  EXPECT_NE(std::string(m.type_name()).find("int"), std::string::npos);
  EXPECT_STREQ(Message().type_name(), "empty");
}

}  // namespace
}  // namespace gyre
