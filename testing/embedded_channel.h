// EmbeddedChannel: a channel with no socket, for testing handlers and pipelines.
//
//   auto ch = testing::EmbeddedChannel::Create({std::make_shared<LineDecoder>()});
//   ch->WriteInbound(std::string("a\nb"));         // through the pipeline, head to tail
//   std::optional<std::string> line = ch->ReadInbound<std::string>();   // "a"
//   ch->WriteOutbound(std::string("x"));           // tail to head; ReadOutbound() gets it
//   EXPECT_TRUE(ch->CheckException().ok());        // no exception reached the tail
//   ch->Finish();
//
// Messages that reach the end of the pipeline are kept (ReadInbound), not discarded;
// writes that reach the head are kept (ReadOutbound) and succeed. Everything runs on the
// calling thread: tasks queued on the channel's EmbeddedEventLoop run at the end of each
// Write* call or on RunPendingTasks().
//
// Thread safety: thread-compatible; one test thread.
// Ownership: shared (std::shared_ptr); owns its EmbeddedEventLoop. Run the pending tasks
// (Finish does) before dropping the last handle.
#ifndef GYRE_TESTING_EMBEDDED_CHANNEL_H_
#define GYRE_TESTING_EMBEDDED_CHANNEL_H_

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/message.h"
#include "gyre/testing/embedded_event_loop.h"

namespace gyre {
namespace testing {

class EmbeddedChannel final : public Channel {
 public:
  // A registered, active channel whose pipeline holds `handlers`, in order.
  static std::shared_ptr<EmbeddedChannel> Create(
      std::vector<std::shared_ptr<ChannelHandler>> handlers = {});
  // Not yet registered (for registration-order tests); call Register().
  static std::shared_ptr<EmbeddedChannel> CreateUnregistered();

  EmbeddedChannel(const EmbeddedChannel&) = delete;
  EmbeddedChannel& operator=(const EmbeddedChannel&) = delete;
  ~EmbeddedChannel() override;

  EmbeddedEventLoop& loop() { return loop_; }
  // Registers with loop() and activates.
  absl::Status Register();

  // Fires ChannelRead(msg) and ChannelReadComplete; runs pending tasks. Returns true if
  // messages are waiting in ReadInbound().
  bool WriteInbound(Message msg);
  // Writes and flushes `msg` from the tail; runs pending tasks. Returns true if messages
  // are waiting in ReadOutbound().
  bool WriteOutbound(Message msg);

  std::optional<Message> ReadInbound();
  std::optional<Message> ReadOutbound();
  template <typename T>
  std::optional<T> ReadInbound() {
    std::optional<Message> m = ReadInbound();
    if (!m.has_value()) return std::nullopt;
    return std::move(*m).Take<T>();
  }
  template <typename T>
  std::optional<T> ReadOutbound() {
    std::optional<Message> m = ReadOutbound();
    if (!m.has_value()) return std::nullopt;
    return std::move(*m).Take<T>();
  }
  size_t InboundCount() const { return inbound_.size(); }
  size_t OutboundCount() const { return outbound_.size(); }

  // Returns, and forgets, the first exception that reached the tail (OK if none).
  absl::Status CheckException();

  // Runs the loop's pending tasks.
  int RunPendingTasks() { return loop_.RunPendingTasks(); }

  // Closes the channel, runs pending tasks; returns true if any inbound or outbound
  // message was left unread.
  bool Finish();

  bool IsOpen() const override { return open_; }
  bool IsActive() const override { return open_ && active_; }
  SocketAddress local_address() const override { return {}; }
  SocketAddress remote_address() const override { return {}; }
  Unsafe& unsafe() override { return unsafe_; }

 private:
  class EmbeddedUnsafe final : public Unsafe {
   public:
    explicit EmbeddedUnsafe(EmbeddedChannel* ch) : ch_(ch) {}
    void Register(EventLoop* loop, ChannelPromise promise) override;
    void Bind(const SocketAddress&, ChannelPromise promise) override { promise.TrySuccess(); }
    void Connect(const SocketAddress&, const SocketAddress&, ChannelPromise promise) override {
      promise.TrySuccess();
    }
    void Disconnect(ChannelPromise promise) override { Close(std::move(promise)); }
    void Close(ChannelPromise promise) override;
    void Deregister(ChannelPromise promise) override;
    void BeginRead() override { ++ch_->reads_requested_; }
    void Write(Message msg, ChannelPromise promise) override;
    void Flush() override { ++ch_->flushes_; }

   private:
    EmbeddedChannel* const ch_;
  };

  EmbeddedChannel();

  EmbeddedEventLoop loop_;
  EmbeddedUnsafe unsafe_{this};
  bool open_ = true;
  bool active_ = false;
  std::deque<Message> inbound_;
  std::deque<Message> outbound_;
  std::vector<absl::Status> exceptions_;

 public:
  // Counters for tests.
  int reads_requested_ = 0;
  int flushes_ = 0;
};

}  // namespace testing
}  // namespace gyre

#endif  // GYRE_TESTING_EMBEDDED_CHANNEL_H_
