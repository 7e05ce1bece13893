// Helpers for tests that push a long, checkable byte stream through a real socket and
// count the process's file descriptors, with a raw loopback client, a listener
// registered and bound in one step (RegisterAndBind), an echo handler to talk to, and
// handlers that collect what arrives:
//
//   ByteBuf chunk = testing::StreamChunk(offset, n);     // bytes offset..offset+n-1
//   testing::PeerRead r = testing::ReadStreamUntilEnd(fd);
//   EXPECT_EQ(r.bytes, total); EXPECT_EQ(r.first_bad, UINT64_MAX); EXPECT_EQ(r.last, 0);
//   EXPECT_EQ(testing::OpenFdCount(), before);
//
// Thread safety: stateless functions. Ownership: the caller owns every fd it passes.
#ifndef GYRE_TESTING_STREAM_TEST_UTIL_H_
#define GYRE_TESTING_STREAM_TEST_UTIL_H_

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_future.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/event_loop.h"
#include "gyre/channel/socket_address.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/promise.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace testing {

// The byte at `offset` of the test stream: position-dependent, so a lost, repeated or
// reordered byte shows at its offset.
inline char StreamByte(uint64_t offset) {
  return static_cast<char>((offset ^ (offset >> 9) ^ (offset >> 17)) & 0xff);
}

// The stream's bytes offset .. offset + n - 1 in a pooled buffer.
inline ByteBuf StreamChunk(uint64_t offset, size_t n) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = StreamByte(offset + i);
  absl::StatusOr<ByteBuf> b = PooledByteBufAllocator::Default()->CopiedBuffer(bytes);
  GYRE_CHECK(b.ok()) << b.status();
  return *std::move(b);
}

// Writes the stream's first `chunks` x `chunk` bytes to `ch` in one task on `loop` (the
// loop `ch` is or will be registered with: a child handed out by a server's initializer
// is not registered yet):
// every chunk but the last with WriteAndFlush, the last with a plain Write (queued, not
// flushed). Returns the writes' futures, and in `*pending` the channel's pending outbound
// bytes right after (-1 if the loop did not run the task within `wait`). `Ch` is a
// socket channel (it has PendingOutboundBytes()).
template <typename Ch>
std::vector<ChannelFuture> QueueStreamWrites(EventExecutor* loop, std::shared_ptr<Ch> ch,
                                             int chunks, size_t chunk, absl::Duration wait,
                                             int64_t* pending) {
  std::vector<ChannelFuture> writes;
  Promise<int64_t> queued(nullptr);
  absl::Status status = loop->Execute([ch, chunks, chunk, &writes, queued]() mutable {
    for (int i = 0; i < chunks; ++i) {
      ByteBuf b = StreamChunk(uint64_t{chunk} * i, chunk);
      writes.push_back(i + 1 < chunks ? ch->WriteAndFlush(std::move(b)) : ch->Write(std::move(b)));
    }
    queued.TrySuccess(ch->PendingOutboundBytes());
  });
  *pending = status.ok() && queued.AwaitFor(wait) ? *queued.GetNow() : -1;
  return writes;
}

// QueueStreamWrites, expecting more than half of the `chunks` x `chunk` bytes to be still
// pending in the channel right after: for tests whose socket buffers are shrunk so that
// they take at most a few hundred KiB.
template <typename Ch>
std::vector<ChannelFuture> QueueMostlyPendingStreamWrites(EventExecutor* loop,
                                                          std::shared_ptr<Ch> ch, int chunks,
                                                          size_t chunk, absl::Duration wait) {
  int64_t pending = 0;
  std::vector<ChannelFuture> writes =
      QueueStreamWrites(loop, std::move(ch), chunks, chunk, wait, &pending);
  EXPECT_GT(pending, static_cast<int64_t>(uint64_t{chunk} * chunks / 2));
  return writes;
}

// What a blocking reader saw of the stream.
struct PeerRead {
  uint64_t bytes = 0;                // stream bytes received
  uint64_t first_bad = UINT64_MAX;   // offset of the first wrong byte, if any
  ssize_t last = 0;                  // the final recv's result: 0 for EOF, -1 for an error
  int last_errno = 0;                // its errno when -1
};

// Reads `fd` (blocking) until EOF or an error, checking every byte against the stream.
inline PeerRead ReadStreamUntilEnd(int fd) {
  PeerRead r;
  std::vector<char> buf(64 * 1024);
  for (;;) {
    ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.last = n;
      r.last_errno = n < 0 ? errno : 0;
      return r;
    }
    for (ssize_t i = 0; i < n && r.first_bad == UINT64_MAX; ++i) {
      if (buf[i] != StreamByte(r.bytes + static_cast<uint64_t>(i))) {
        r.first_bad = r.bytes + static_cast<uint64_t>(i);
      }
    }
    r.bytes += static_cast<uint64_t>(n);
  }
}

// Reads `fd` to its end (ReadStreamUntilEnd) and expects exactly the stream's first
// `total` bytes, then EOF (not a reset).
inline void ExpectStreamThenEof(int fd, uint64_t total) {
  const PeerRead read = ReadStreamUntilEnd(fd);
  EXPECT_EQ(read.bytes, total);
  EXPECT_EQ(read.first_bad, UINT64_MAX) << "first wrong byte at offset " << read.first_bad;
  EXPECT_EQ(read.last, 0) << "expected EOF, not a reset (errno " << read.last_errno << ")";
}

// Waits up to `wait` for each of `writes` and expects it to have succeeded.
inline void ExpectWritesSucceed(const std::vector<ChannelFuture>& writes, absl::Duration wait) {
  for (const ChannelFuture& w : writes) {
    ASSERT_TRUE(w.AwaitFor(wait));
    EXPECT_TRUE(w.IsSuccess()) << w.Cause();
  }
}

// A deterministic pseudo-random payload of `n` bytes for `seed` (different seeds,
// different bytes: a mix-up between connections shows).
inline std::string PatternBytes(uint32_t seed, size_t n) {
  std::string s(n, '\0');
  uint32_t x = 2654435761u * (seed + 1);
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// A blocking client socket connected to 127.0.0.1:port, with SO_RCVBUF `rcvbuf` when
// positive (set before connecting, so the window follows it); -1 on failure.
inline int ConnectLoopback(uint16_t port, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  SocketAddress target = SocketAddress::Loopback(port);
  if (connect(fd, target.sockaddr_ptr(), target.sockaddr_len()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// `f`'s outcome once it completes within `wait`; DeadlineExceeded when it does not.
inline absl::Status AwaitOutcome(ChannelFuture f, absl::Duration wait) {
  if (!f.AwaitFor(wait)) return absl::DeadlineExceededError("the operation did not complete");
  return f.IsSuccess() ? absl::OkStatus() : f.Cause();
}

// Registers `server` with `group` and binds it to `local` (port 0: an ephemeral one),
// waiting up to `wait` for each step; the first step's error, if any.
inline absl::Status RegisterAndBind(EventLoopGroup& group, std::shared_ptr<Channel> server,
                                    const SocketAddress& local, absl::Duration wait) {
  absl::Status registered = AwaitOutcome(group.Register(server), wait);
  if (!registered.ok()) return registered;
  return AwaitOutcome(server->Bind(local), wait);
}

// Writes back what it reads, flushing at each read-complete. Sharable: one instance
// may serve every channel.
class EchoHandler : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override { ctx.Write(std::move(msg)); }
  void ChannelReadComplete(ChannelHandlerContext& ctx) override { ctx.Flush(); }
};

// Collects the bytes it reads and completes `done` with all of them once at least
// `expected` bytes arrived. One instance per channel (its callbacks run on that
// channel's loop).
class CollectingHandler : public ChannelInboundHandler {
 public:
  CollectingHandler(size_t expected, Promise<std::string> done)
      : expected_(expected), done_(std::move(done)) {}
  void ChannelRead(ChannelHandlerContext&, Message msg) override {
    if (ByteBuf* buf = msg.Get<ByteBuf>()) got_ += buf->ToString();
    if (got_.size() >= expected_) done_.TrySuccess(got_);
  }

 private:
  const size_t expected_;
  Promise<std::string> done_;
  std::string got_;
};

// The names of the events a handler saw, in order. A handler adds them on its loop;
// the test reads them from its own thread.
//
// Thread safety: thread-safe.
class EventLog {
 public:
  void Add(const char* event) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(event);
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

// Collects the bytes a channel reads and its life events ("active", "inactive",
// "unregistered"), and completes a promise at each milestone: `all_` once `expect`
// bytes arrived (when not 0), `inactive_`, `unregistered_`, `unwritable_`,
// `writable_again_`. Swallows exceptions.
//
// Thread safety: callbacks run on the channel's loop; the accessors and promises are
// safe from any thread.
class Collector final : public ChannelInboundHandler {
 public:
  explicit Collector(size_t expect = 0) : expect_(expect) {}

  void ChannelRead(ChannelHandlerContext&, Message msg) override {
    if (ByteBuf* b = msg.Get<ByteBuf>()) {
      absl::string_view v = b->ReadableView();
      std::lock_guard<std::mutex> lock(mu_);
      data_.append(v.data(), v.size());
      if (expect_ != 0 && data_.size() >= expect_) all_.TrySuccess(data_);
    }
  }
  void ChannelActive(ChannelHandlerContext& ctx) override {
    events_.Add("active");
    ctx.FireChannelActive();
  }
  void ChannelInactive(ChannelHandlerContext& ctx) override {
    events_.Add("inactive");
    inactive_.TrySuccess();
    ctx.FireChannelInactive();
  }
  void ChannelUnregistered(ChannelHandlerContext& ctx) override {
    events_.Add("unregistered");
    unregistered_.TrySuccess();
    ctx.FireChannelUnregistered();
  }
  void ChannelWritabilityChanged(ChannelHandlerContext& ctx) override {
    if (ctx.channel().IsWritable()) {
      writable_again_.TrySuccess();
    } else {
      unwritable_.TrySuccess();
    }
    ctx.FireChannelWritabilityChanged();
  }
  void ExceptionCaught(ChannelHandlerContext&, absl::Status) override {}

  std::vector<std::string> events() { return events_.events(); }
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return data_.size();
  }

  Promise<std::string> all_{nullptr};
  Promise<void> inactive_{nullptr};
  Promise<void> unregistered_{nullptr};
  Promise<void> unwritable_{nullptr};
  Promise<void> writable_again_{nullptr};

 private:
  const size_t expect_;
  std::mutex mu_;
  std::string data_;
  testing::EventLog events_;
};

// A TCP socket bound to a free 127.0.0.1 port that does not listen: while it is open no
// one else can take the port and connecting to it is refused (no TCP self-connect can
// succeed there either). Returns the fd (the caller closes it) and sets `*port`; -1 on
// failure.
inline int BoundNotListening(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sin);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(sin.sin_port);
  return fd;
}

// The number of entries of the directory `path`, not counting "." and ".." (nor other
// dot files). -1 if it cannot be opened.
inline int DirEntryCount(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

// The number of open file descriptors of this process (entries of /proc/self/fd, not
// counting the one used to read the directory). -1 if /proc is unavailable.
inline int OpenFdCount() {
  const int n = DirEntryCount("/proc/self/fd");
  return n < 0 ? -1 : n - 1;
}

// The number of threads of this process (entries of /proc/self/task). -1 if /proc is
// unavailable.
inline int ThreadCount() { return DirEntryCount("/proc/self/task"); }

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_STREAM_TEST_UTIL_H_
