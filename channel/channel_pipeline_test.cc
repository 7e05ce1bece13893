#include "gyre/channel/channel_pipeline.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "gyre/channel/channel.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/unpooled_byte_buf_allocator.h"
#include "gyre/concurrent/default_event_executor.h"
#include "gyre/concurrent/immediate_event_executor.h"
#include "gyre/testing/test_executor.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace {

using ::gyre::testing::EmbeddedChannel;
using ::testing::ElementsAre;

// Records the events it sees into a shared log, tagged with its name, and passes them on.
class Recorder : public ChannelDuplexHandler {
 public:
  Recorder(std::string tag, std::vector<std::string>* log) : tag_(std::move(tag)), log_(log) {}
  void HandlerAdded(ChannelHandlerContext&) override { log_->push_back(tag_ + ":added"); }
  void HandlerRemoved(ChannelHandlerContext&) override { log_->push_back(tag_ + ":removed"); }
  void ChannelActive(ChannelHandlerContext& ctx) override {
    log_->push_back(tag_ + ":active");
    ctx.FireChannelActive();
  }
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    log_->push_back(tag_ + ":read");
    ctx.FireChannelRead(std::move(msg));
  }
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    log_->push_back(tag_ + ":write");
    ctx.Write(std::move(msg), std::move(p));
  }

 private:
  std::string tag_;
  std::vector<std::string>* log_;
};

// Appends its tag to string messages in both directions.
class Appender : public ChannelDuplexHandler {
 public:
  explicit Appender(std::string tag) : tag_(std::move(tag)) {}
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    std::string s = *std::move(msg).Take<std::string>();
    ctx.FireChannelRead(s + tag_);
  }
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    std::string s = *std::move(msg).Take<std::string>();
    ctx.Write(s + tag_, std::move(p));
  }

 private:
  std::string tag_;
};

class InboundOnly : public ChannelInboundHandler {
 public:
  explicit InboundOnly(int* writes_seen) : writes_seen_(writes_seen) {}
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    ++*writes_seen_;  // never called: the mask skips it
    ctx.Write(std::move(msg), std::move(p));
  }

 private:
  int* writes_seen_;
};

TEST(PipelineTest, InboundHeadToTailOutboundTailToHead) {
  auto ch = EmbeddedChannel::Create({std::make_shared<Appender>("1"), std::make_shared<Appender>("2"),
                                     std::make_shared<Appender>("3")});
  ASSERT_TRUE(ch->WriteInbound(std::string("in:")));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "in:123");
  ASSERT_TRUE(ch->WriteOutbound(std::string("out:")));
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "out:321");
  EXPECT_TRUE(ch->CheckException().ok());
  EXPECT_FALSE(ch->Finish());
}

TEST(PipelineTest, MaskSkipsHandlersOfTheOtherDirection) {
  int writes_seen = 0;
  auto ch = EmbeddedChannel::Create({std::make_shared<InboundOnly>(&writes_seen)});
  ch->WriteOutbound(std::string("x"));
  EXPECT_EQ(writes_seen, 0);
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "x");
  ch->Finish();
}

TEST(PipelineTest, AddPositionsAndNames) {
  auto ch = EmbeddedChannel::Create();
  ChannelPipeline& p = ch->pipeline();
  std::vector<std::string> log;
  ASSERT_TRUE(p.AddLast("b", std::make_shared<Recorder>("b", &log)).ok());
  ASSERT_TRUE(p.AddFirst("a", std::make_shared<Recorder>("a", &log)).ok());
  ASSERT_TRUE(p.AddLast("d", std::make_shared<Recorder>("d", &log)).ok());
  ASSERT_TRUE(p.AddBefore("d", "c", std::make_shared<Recorder>("c", &log)).ok());
  ASSERT_TRUE(p.AddAfter("d", "e", std::make_shared<Recorder>("e", &log)).ok());
  EXPECT_THAT(p.Names(), ElementsAre("a", "b", "c", "d", "e"));
  // Registered channel: HandlerAdded ran at once, in add order.
  EXPECT_THAT(log, ElementsAre("b:added", "a:added", "d:added", "c:added", "e:added"));

  EXPECT_EQ(p.AddLast("a", std::make_shared<Recorder>("x", &log)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.AddLast("head", std::make_shared<Recorder>("x", &log)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.AddBefore("nope", "x", std::make_shared<Recorder>("x", &log)).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(p.AddLast("x", nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.Names(), ElementsAre("a", "b", "c", "d", "e"));
  ASSERT_TRUE(p.AddLast("", std::make_shared<Recorder>("gen", &log)).ok());
  EXPECT_EQ(p.Names().size(), 6u);
  EXPECT_NE(p.Get("a"), nullptr);
  EXPECT_EQ(p.Get("zzz"), nullptr);
  EXPECT_EQ(p.Context("a")->name(), "a");
  ch->Finish();
}

TEST(PipelineTest, NonSharableHandlerOnlyOnce) {
  auto h = std::make_shared<Appender>("x");
  auto a = EmbeddedChannel::Create({h});
  auto b = EmbeddedChannel::Create();
  EXPECT_EQ(b->pipeline().AddLast("again", h).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->pipeline().AddLast("again", h).code(), absl::StatusCode::kFailedPrecondition);
  // Once removed, it may go elsewhere.
  ASSERT_TRUE(a->pipeline().Remove(h.get()).ok());
  EXPECT_TRUE(b->pipeline().AddLast("moved", h).ok());
  a->Finish();
  b->Finish();
}

class Sharable : public ChannelInboundHandler {
 public:
  bool IsSharable() const override { return true; }
};

TEST(PipelineTest, SharableHandlerInManyPipelines) {
  auto h = std::make_shared<Sharable>();
  auto a = EmbeddedChannel::Create({h});
  auto b = EmbeddedChannel::Create({h});
  EXPECT_EQ(a->pipeline().Names().size(), 1u);
  EXPECT_EQ(b->pipeline().Names().size(), 1u);
  a->Finish();
  b->Finish();
}

TEST(PipelineTest, HandlerAddedWaitsForRegistration) {
  std::vector<std::string> log;
  auto ch = EmbeddedChannel::CreateUnregistered();
  ASSERT_TRUE(ch->pipeline().AddLast("r", std::make_shared<Recorder>("r", &log)).ok());
  EXPECT_TRUE(log.empty());
  ASSERT_TRUE(ch->Register().ok());
  EXPECT_THAT(log, ElementsAre("r:added", "r:active"));
  ch->Finish();
}

TEST(PipelineTest, RemoveAndReplace) {
  std::vector<std::string> log;
  auto ch = EmbeddedChannel::Create();
  ChannelPipeline& p = ch->pipeline();
  ASSERT_TRUE(p.AddLast("a", std::make_shared<Appender>("A")).ok());
  ASSERT_TRUE(p.AddLast("r", std::make_shared<Recorder>("r", &log)).ok());
  ASSERT_TRUE(p.AddLast("b", std::make_shared<Appender>("B")).ok());
  absl::StatusOr<std::shared_ptr<ChannelHandler>> removed = p.Remove("a");
  ASSERT_TRUE(removed.ok());
  EXPECT_NE(*removed, nullptr);
  EXPECT_EQ(p.Remove("a").status().code(), absl::StatusCode::kNotFound);
  ch->WriteInbound(std::string(""));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "B");
  absl::StatusOr<std::shared_ptr<ChannelHandler>> old =
      p.Replace("b", "c", std::make_shared<Appender>("C"));
  ASSERT_TRUE(old.ok());
  EXPECT_THAT(p.Names(), ElementsAre("r", "c"));
  ch->WriteInbound(std::string(""));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "C");
  EXPECT_EQ(p.Replace("nope", "", std::make_shared<Appender>("x")).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(p.Remove("r").ok());
  EXPECT_THAT(log, ElementsAre("r:added", "r:read", "r:read", "r:removed"));
  ch->Finish();
}

// Removes itself from the pipeline on the first read.
class OneShot : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    std::string s = *std::move(msg).Take<std::string>();
    ctx.pipeline().Remove(this).IgnoreError();
    ctx.FireChannelRead(s + "!");
  }
};

TEST(PipelineTest, HandlerRemovesItselfWhileEventsFlow) {
  auto ch = EmbeddedChannel::Create({std::make_shared<OneShot>(), std::make_shared<Appender>("z")});
  ch->WriteInbound(std::string("1"));
  ch->WriteInbound(std::string("2"));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "1!z");
  EXPECT_EQ(ch->ReadInbound<std::string>(), "2z");
  ch->Finish();
}

class ThrowsOnRead : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext&, Message) override {
    throw std::runtime_error("decode failed");
  }
};

class ThrowsOnWrite : public ChannelOutboundHandler {
 public:
  void Write(ChannelHandlerContext&, Message, ChannelPromise) override {
    throw std::runtime_error("encode failed");
  }
};

TEST(PipelineTest, InboundThrowBecomesExceptionCaught) {
  auto ch = EmbeddedChannel::Create({std::make_shared<ThrowsOnRead>()});
  ch->WriteInbound(std::string("x"));
  absl::Status cause = ch->CheckException();
  EXPECT_EQ(cause.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(cause.message()), ::testing::HasSubstr("decode failed"));
  EXPECT_TRUE(ch->CheckException().ok());
  EXPECT_TRUE(ch->IsOpen());  // the channel keeps going
  ch->Finish();
}

// B99: an outbound operation given a promise that is already cancelled is not
// performed, and a write's message is released; a promise already succeeded is the
// caller's error, reported at ExceptionCaught, and the operation is not performed either.
TEST(PipelineTest, OperationsWithADonePromiseAreNotPerformedB99) {
  auto alloc = UnpooledByteBufAllocator::Create();
  ASSERT_TRUE(alloc.ok());
  auto ch = EmbeddedChannel::Create({});
  absl::StatusOr<ByteBuf> buf = (*alloc)->CopiedBuffer("abc");
  ASSERT_TRUE(buf.ok());
  ASSERT_EQ((*alloc)->LiveBuffers(), 1);

  ChannelPromise cancelled = ch->NewPromise();
  ASSERT_TRUE(cancelled.Cancel());
  ch->Write(Message(*std::move(buf)), cancelled);
  ch->RunPendingTasks();
  EXPECT_TRUE(cancelled.IsCancelled());
  EXPECT_EQ(ch->OutboundCount(), 0u);
  EXPECT_EQ((*alloc)->LiveBuffers(), 0);  // released, not leaked
  EXPECT_TRUE(ch->CheckException().ok());  // taking an operation back is not an error

  ChannelPromise close_cancelled = ch->NewPromise();
  ASSERT_TRUE(close_cancelled.Cancel());
  ch->Close(close_cancelled);
  ch->RunPendingTasks();
  EXPECT_TRUE(ch->IsOpen());

  ChannelPromise succeeded = ch->NewPromise();
  ASSERT_TRUE(succeeded.TrySuccess());
  ch->WriteAndFlush(Message(std::string("x")), succeeded);
  ch->RunPendingTasks();
  EXPECT_EQ(ch->OutboundCount(), 0u);
  absl::Status cause = ch->CheckException();
  EXPECT_EQ(cause.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cause.message()), ::testing::HasSubstr("WriteAndFlush"));
  ch->Close(succeeded);
  EXPECT_TRUE(ch->IsOpen());
  EXPECT_EQ(ch->CheckException().code(), absl::StatusCode::kInvalidArgument);

  // A live promise (and the void one) still goes through.
  ChannelPromise live = ch->NewPromise();
  ch->WriteAndFlush(Message(std::string("y")), live);
  ch->WriteAndFlush(Message(std::string("z")), ch->VoidPromise());
  ch->RunPendingTasks();
  EXPECT_TRUE(live.IsSuccess());
  EXPECT_EQ(ch->OutboundCount(), 2u);
  EXPECT_TRUE(ch->CheckException().ok());
  ch->Finish();
}

// B95: a pipeline pins one child of a group: every handler it adds with that group runs
// on the same executor (so their events stay ordered), and another channel's pipeline
// gets the group's next child.
TEST(PipelineTest, HandlersAddedWithAGroupShareOneChildPerPipelineB95) {
  absl::StatusOr<std::unique_ptr<DefaultEventExecutorGroup>> group =
      DefaultEventExecutorGroup::Create(4);
  ASSERT_TRUE(group.ok());
  auto first = EmbeddedChannel::Create({});
  auto second = EmbeddedChannel::Create({});
  ASSERT_TRUE(
      first->pipeline().AddLast(group->get(), "a", std::make_shared<ChannelDuplexHandler>()).ok());
  ASSERT_TRUE(first->pipeline().AddLast("plain", std::make_shared<ChannelDuplexHandler>()).ok());
  ASSERT_TRUE(
      first->pipeline().AddLast(group->get(), "b", std::make_shared<ChannelDuplexHandler>()).ok());
  ASSERT_TRUE(
      second->pipeline().AddLast(group->get(), "c", std::make_shared<ChannelDuplexHandler>()).ok());
  EventExecutor* a = first->pipeline().Context("a")->executor();
  EventExecutor* b = first->pipeline().Context("b")->executor();
  EventExecutor* c = second->pipeline().Context("c")->executor();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, first->pipeline().Context("plain")->executor());  // the channel's own loop
  const std::vector<EventExecutor*> children = (*group)->executors();
  EXPECT_NE(std::find(children.begin(), children.end(), a), children.end());
  EXPECT_NE(std::find(children.begin(), children.end(), c), children.end());
  first->Finish();
  second->Finish();
  // The close's events and the removals hop between the group's threads and the
  // channels' loops; each hop to a loop is a task holding its channel. Pass them back and
  // forth until a round in which the loops ran nothing (as DrainWith below does).
  int ran = 0;
  do {
    ASSERT_TRUE(a->Submit([] {}).Await().ok());
    ASSERT_TRUE(c->Submit([] {}).Await().ok());
    ran = first->RunPendingTasks() + second->RunPendingTasks();
  } while (ran > 0);
  ASSERT_TRUE((*group)->ShutdownGracefully(absl::ZeroDuration(), absl::Seconds(30)).Await().ok());
}

TEST(PipelineTest, OutboundThrowFailsThePromise) {
  auto ch = EmbeddedChannel::Create({std::make_shared<ThrowsOnWrite>()});
  ChannelFuture f = ch->WriteAndFlush(std::string("x"));
  ch->RunPendingTasks();
  ASSERT_TRUE(f.IsDone());
  EXPECT_EQ(f.Cause().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(f.Cause().message()), ::testing::HasSubstr("encode failed"));
  EXPECT_EQ(ch->OutboundCount(), 0u);
  ch->Finish();
}

struct Counted {
  static inline int live = 0;
  Counted() { ++live; }
  Counted(Counted&&) noexcept { ++live; }
  ~Counted() { --live; }
};

class Dropper : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext&, Message) override {}  // consumes (destroys)
};

TEST(PipelineTest, ConsumedMessagesAreReleased) {
  auto ch = EmbeddedChannel::Create({std::make_shared<Dropper>()});
  ch->WriteInbound(Counted());
  EXPECT_EQ(Counted::live, 0);
  EXPECT_EQ(ch->InboundCount(), 0u);
  ch->Finish();
}

TEST(PipelineTest, WriteResultsReachPromises) {
  auto ch = EmbeddedChannel::Create();
  ChannelFuture ok = ch->WriteAndFlush(std::string("x"));
  EXPECT_TRUE(ok.IsSuccess());
  ch->Close();
  ChannelFuture closed = ch->WriteAndFlush(std::string("y"));
  EXPECT_EQ(closed.Cause().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(ch->CloseFuture().IsSuccess());
  ch->Finish();
}

// Fails every write with DataLoss, after noting what promise it got and listening on it.
class RefusesWrites : public ChannelOutboundHandler {
 public:
  void Write(ChannelHandlerContext&, Message, ChannelPromise p) override {
    got_real_promise = p.valid();
    p.AddListener([this](const ChannelFuture& f) { heard = f.Cause(); });
    p.TryFailure(absl::DataLossError("refused"));
  }
  bool got_real_promise = false;
  absl::Status heard;
};

// Netty's void promise: nothing to complete when the write succeeds; a failure reaches
// ExceptionCaught instead; a handler in the way gets a real promise (it may listen).
TEST(PipelineTest, VoidPromiseWritesGoThroughAndTheirFailuresReachExceptionCaught) {
  auto ch = EmbeddedChannel::Create({std::make_shared<Appender>("+")});
  ch->WriteAndFlush(std::string("x"), VoidPromise());
  ch->pipeline().Write(std::string("y"), ch->VoidPromise());
  ch->Flush();
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "x+");
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "y+");
  EXPECT_TRUE(ch->CheckException().ok());
  ch->Finish();

  auto refuses = std::make_shared<RefusesWrites>();
  auto refused = EmbeddedChannel::Create({refuses});
  refused->WriteAndFlush(std::string("z"), VoidPromise());
  refused->RunPendingTasks();
  EXPECT_TRUE(refuses->got_real_promise);
  EXPECT_EQ(refuses->heard.code(), absl::StatusCode::kDataLoss);  // its listener ran
  absl::Status cause = refused->CheckException();
  EXPECT_EQ(cause.code(), absl::StatusCode::kDataLoss) << cause;
  EXPECT_EQ(refused->OutboundCount(), 0u);
  refused->Finish();

  // At the transport: a closed channel refuses the write.
  auto closed = EmbeddedChannel::Create();
  closed->Close();
  EXPECT_TRUE(closed->CheckException().ok());
  closed->WriteAndFlush(std::string("late"), VoidPromise());
  EXPECT_EQ(closed->CheckException().code(), absl::StatusCode::kFailedPrecondition);
  closed->Finish();
}

// A handler whose AcceptsVoidPromise() says so gets the void promise as it is (and can
// pass it on, or report a failure with FailWrite, or Unvoid it to listen); any other
// gets a real one.
class NotesPromises : public ChannelOutboundHandler {
 public:
  explicit NotesPromises(bool accepts) : accepts_(accepts) {}
  bool AcceptsVoidPromise() const override { return accepts_; }
  void Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise p) override {
    got_void.push_back(!p.valid());
    if (msg.Get<std::string>() != nullptr && *msg.Get<std::string>() == "fail") {
      ctx.channel().FailWrite(p, absl::DataLossError("refused"));
      return;
    }
    if (msg.Get<std::string>() != nullptr && *msg.Get<std::string>() == "unvoid") {
      p = ctx.Unvoid(std::move(p));
      unvoided_real = p.valid();
      p.TryFailure(absl::AbortedError("unvoided"));
      return;
    }
    ctx.Write(std::move(msg), std::move(p));
  }
  std::vector<bool> got_void;
  bool unvoided_real = false;

 private:
  const bool accepts_;
};

TEST(PipelineTest, AHandlerThatAcceptsTheVoidPromiseGetsItAsItIs) {
  auto takes = std::make_shared<NotesPromises>(true);
  auto refuses = std::make_shared<NotesPromises>(false);
  // Outbound order: takes, then refuses, then the transport.
  auto ch = EmbeddedChannel::Create({refuses, takes});
  ch->WriteAndFlush(std::string("x"), VoidPromise());
  EXPECT_EQ(takes->got_void, std::vector<bool>{true});
  EXPECT_EQ(refuses->got_void, std::vector<bool>{false});  // in place of the void one
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "x");
  ch->WriteAndFlush(std::string("y"));  // a real promise stays real
  EXPECT_EQ(takes->got_void.back(), false);
  EXPECT_EQ(ch->ReadOutbound<std::string>(), "y");
  EXPECT_TRUE(ch->CheckException().ok());
  // Its failure, reported with FailWrite, reaches ExceptionCaught.
  ch->WriteAndFlush(std::string("fail"), VoidPromise());
  EXPECT_EQ(ch->CheckException().code(), absl::StatusCode::kDataLoss);
  // Unvoid: a real promise whose failure reaches ExceptionCaught too.
  ch->WriteAndFlush(std::string("unvoid"), VoidPromise());
  EXPECT_TRUE(takes->unvoided_real);
  EXPECT_EQ(ch->CheckException().code(), absl::StatusCode::kAborted);
  ch->Finish();
}

// Other operations accept the void promise too (their outcome unobserved).
TEST(PipelineTest, VoidPromiseOnOtherOperationsIsHarmless) {
  auto ch = EmbeddedChannel::Create();
  ChannelPromise v = VoidPromise();
  EXPECT_FALSE(v.valid());
  EXPECT_FALSE(v.TrySuccess());
  EXPECT_FALSE(v.TryFailure(absl::InternalError("x")));
  EXPECT_EQ(v.SetSuccess().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(v.SetUncancellable());
  EXPECT_TRUE(v.ResetIfUnobserved());
  ch->Close(VoidPromise());
  ch->RunPendingTasks();
  EXPECT_FALSE(ch->IsOpen());
  EXPECT_TRUE(ch->CloseFuture().IsSuccess());
  EXPECT_TRUE(ch->CheckException().ok());
  ch->Finish();
}

// Fails each operation's promise with its own name, and logs Read and Flush.
class OperationProbe : public ChannelOutboundHandler {
 public:
  explicit OperationProbe(std::vector<std::string>* log) : log_(log) {}
  void Bind(ChannelHandlerContext&, const SocketAddress&, ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("bind"));
  }
  void Connect(ChannelHandlerContext&, const SocketAddress&, const SocketAddress&,
               ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("connect"));
  }
  void Disconnect(ChannelHandlerContext&, ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("disconnect"));
  }
  void Close(ChannelHandlerContext&, ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("close"));
  }
  void Deregister(ChannelHandlerContext&, ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("deregister"));
  }
  void Write(ChannelHandlerContext&, Message msg, ChannelPromise p) override {
    p.TryFailure(absl::AbortedError("write " + *std::move(msg).Take<std::string>()));
  }
  void Read(ChannelHandlerContext&) override { log_->push_back("read"); }
  void Flush(ChannelHandlerContext&) override { log_->push_back("flush"); }

 private:
  std::vector<std::string>* log_;
};

// The operations a channel and its pipeline share (ChannelOutboundInvoker): each form
// enters at the tail and reaches the last outbound handler, the promise-taking forms
// with the caller's own promise.
TEST(PipelineTest, ChannelAndPipelineOfferEveryOutboundOperationInBothForms) {
  std::vector<std::string> log;
  auto ch = EmbeddedChannel::Create({std::make_shared<OperationProbe>(&log)});
  auto cause_of = [](const ChannelFuture& f) {
    return f.IsDone() ? std::string(f.Cause().message()) : std::string("not done");
  };
  const SocketAddress any;
  log.clear();  // the read AUTO_READ asked for on activation
  auto check = [&](auto& invoker) {
    std::vector<ChannelPromise> promises;
    for (int i = 0; i < 7; ++i) promises.push_back(ch->NewPromise());
    invoker.Bind(any, promises[0]);
    invoker.Connect(any, any, promises[1]);
    invoker.Disconnect(promises[2]);
    invoker.Close(promises[3]);
    invoker.Deregister(promises[4]);
    invoker.Write(std::string("a"), promises[5]);
    invoker.WriteAndFlush(std::string("b"), promises[6]);
    invoker.Read().Flush();
    std::vector<std::string> causes;
    for (const ChannelPromise& promise : promises) causes.push_back(cause_of(promise));
    EXPECT_THAT(causes, ElementsAre("bind", "connect", "disconnect", "close", "deregister",
                                    "write a", "write b"));
    causes.clear();
    for (const ChannelFuture& f :
         {invoker.Bind(any), invoker.Connect(any), invoker.Disconnect(), invoker.Close(),
          invoker.Deregister(), invoker.Write(std::string("c")),
          invoker.WriteAndFlush(std::string("d"))}) {
      causes.push_back(cause_of(f));
    }
    EXPECT_THAT(causes, ElementsAre("bind", "connect", "disconnect", "close", "deregister",
                                    "write c", "write d"));
    // WriteAndFlush flushes (twice), and the chained Read().Flush() once more.
    EXPECT_THAT(log, ElementsAre("flush", "read", "flush", "flush"));
    log.clear();
  };
  {
    SCOPED_TRACE("channel");
    check(*ch);
  }
  {
    SCOPED_TRACE("pipeline");
    check(ch->pipeline());
  }
  ch->Finish();
}

// With AUTO_READ, each read batch asks for the next read from the tail once its
// ChannelReadComplete has passed: an outbound handler that intercepts Read (to hold
// reads back) sees every one. (Without one, the head begins the read itself; the NIO
// echo tests stop reading if it does not.)
TEST(PipelineTest, AutoReadAfterEachBatchPassesThroughAnOutboundHandler) {
  std::vector<std::string> log;
  auto ch = EmbeddedChannel::Create({std::make_shared<OperationProbe>(&log)});
  log.clear();  // the read AUTO_READ asked for on activation
  ch->WriteInbound(std::string("a"));
  ch->WriteInbound(std::string("b"));
  EXPECT_THAT(log, ElementsAre("read", "read"));
  ASSERT_TRUE(ch->config().Set(ChannelOption::kAutoRead, false).ok());
  ch->WriteInbound(std::string("c"));
  EXPECT_THAT(log, ElementsAre("read", "read"));
  ch->Finish();
}

// Runs on another executor: records its thread and passes reads on.
class ThreadProbe : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    thread_ = std::this_thread::get_id();
    ctx.FireChannelRead(std::move(msg));
  }
  std::thread::id thread_;
};

// Runs what `other` and the channel's loop hand each other until both are idle: an event
// leaving a pinned handler for a context on the channel's loop is a task on that loop
// holding the channel, so a test that drops the channel with one still queued leaks the
// channel (the task is in its loop's queue). After `other` has run everything queued on
// it, a pass in which the loop ran nothing leaves nothing queued on either.
void DrainWith(EmbeddedChannel& ch, testing::TestExecutor& other) {
  do {
    other.RunAndWait([] {});
  } while (ch.RunPendingTasks() > 0);
}

TEST(PipelineTest, HandlerPinnedToAnotherExecutor) {
  testing::TestExecutor other;
  auto probe = std::make_shared<ThreadProbe>();
  auto ch = EmbeddedChannel::Create();
  ASSERT_TRUE(ch->pipeline().AddLast(&other, "probe", probe).ok());
  EXPECT_EQ(ch->pipeline().Context("probe")->executor(), &other);
  for (int i = 0; i < 100; ++i) ch->pipeline().FireChannelRead(std::to_string(i));
  // The reads hop to `other` and then (the tail runs on the embedded loop) come back as
  // tasks on the embedded loop; wait for them in order.
  for (int i = 0; i < 100; ++i) {
    while (ch->InboundCount() == 0) {
      other.RunAndWait([] {});
      ch->RunPendingTasks();
    }
    EXPECT_EQ(ch->ReadInbound<std::string>(), std::to_string(i));
  }
  std::thread::id other_thread;
  other.RunAndWait([&] { other_thread = std::this_thread::get_id(); });
  EXPECT_EQ(probe->thread_, other_thread);
  ch->Finish();
  DrainWith(*ch, other);
}

// Logs ChannelUnregistered and HandlerRemoved with its tag and the thread it ran on.
class TeardownProbe : public ChannelInboundHandler {
 public:
  struct Log {
    std::mutex mu;
    std::vector<std::string> entries;
    std::vector<std::thread::id> threads;
    void Add(std::string e) {
      std::lock_guard<std::mutex> lock(mu);
      entries.push_back(std::move(e));
      threads.push_back(std::this_thread::get_id());
    }
    std::vector<std::string> Entries() {
      std::lock_guard<std::mutex> lock(mu);
      return entries;
    }
    std::vector<std::thread::id> Threads() {
      std::lock_guard<std::mutex> lock(mu);
      return threads;
    }
  };
  TeardownProbe(std::string tag, Log* log) : tag_(std::move(tag)), log_(log) {}
  void ChannelUnregistered(ChannelHandlerContext& ctx) override {
    log_->Add(tag_ + ":unregistered");
    ctx.FireChannelUnregistered();
  }
  void HandlerRemoved(ChannelHandlerContext&) override { log_->Add(tag_ + ":removed"); }

 private:
  std::string tag_;
  Log* log_;
};

// Closing a channel tears its pipeline down (B97, B98): ChannelUnregistered reaches every
// handler, then each handler's HandlerRemoved runs once, tail to head, on its own
// executor; the pipeline is empty afterwards.
TEST(PipelineTest, ClosingTheChannelRemovesEveryHandlerTailToHeadB97B98) {
  TeardownProbe::Log log;
  auto ch = EmbeddedChannel::Create({std::make_shared<TeardownProbe>("a", &log),
                                     std::make_shared<TeardownProbe>("b", &log),
                                     std::make_shared<TeardownProbe>("c", &log)});
  ASSERT_TRUE(ch->Close().IsSuccess());
  ch->RunPendingTasks();
  EXPECT_THAT(log.Entries(), ElementsAre("a:unregistered", "b:unregistered", "c:unregistered",
                                       "c:removed", "b:removed", "a:removed"));
  EXPECT_TRUE(ch->pipeline().Names().empty());
  ch->Close();  // a second close removes nothing twice
  ch->RunPendingTasks();
  EXPECT_EQ(log.Entries().size(), 6u);
}

TEST(PipelineTest, TeardownRunsHandlerRemovedOnThePinnedExecutor) {
  testing::TestExecutor other;
  TeardownProbe::Log log;
  auto ch = EmbeddedChannel::Create();
  ASSERT_TRUE(ch->pipeline().AddLast(&other, "pinned", std::make_shared<TeardownProbe>("p", &log)).ok());
  other.RunAndWait([] {});  // its HandlerAdded
  ch->Close();
  for (int i = 0; i < 100 && log.Entries().size() < 2; ++i) {
    other.RunAndWait([] {});
    ch->RunPendingTasks();
  }
  // The unregistered event may still be on its way from `other` to the tail.
  DrainWith(*ch, other);
  std::thread::id other_thread;
  other.RunAndWait([&] { other_thread = std::this_thread::get_id(); });
  ASSERT_THAT(log.Entries(), ElementsAre("p:unregistered", "p:removed"));
  EXPECT_EQ(log.Threads()[1], other_thread);
}

// Issue: a long-lived channel that adds and removes a handler per request must not grow.
// A removed handler's context, and the pipeline's reference to the handler, are freed
// once no event can reach them (after a grace period that ends on the channel's loop).
TEST(PipelineTest, ARemovedHandlerIsFreedOnceNoEventCanReachIt) {
  auto ch = EmbeddedChannel::Create({std::make_shared<Appender>("a")});
  constexpr int kRequests = 1000;
  std::vector<std::weak_ptr<ChannelHandler>> removed;
  for (int i = 0; i < kRequests; ++i) {
    auto per_request = std::make_shared<Appender>("r");
    removed.push_back(per_request);
    ASSERT_TRUE(ch->pipeline().AddLast("per-request", std::move(per_request)).ok());
    ASSERT_TRUE(ch->WriteInbound(std::string("m")));
    EXPECT_EQ(ch->ReadInbound<std::string>(), "mar");
    ASSERT_TRUE(ch->pipeline().Remove("per-request").ok());
    if (i % 100 == 99) ch->RunPendingTasks();
  }
  ch->RunPendingTasks();
  EXPECT_EQ(ch->pipeline().ContextCount(), 3);  // head, "a", tail
  for (const auto& w : removed) EXPECT_TRUE(w.expired());
  EXPECT_THAT(ch->pipeline().Names(), ElementsAre("handler#0"));
  ch->Finish();
}

// A handler that removes itself in the middle of a read goes on using its context until
// the read returns (the grace period cannot end inside the running task).
class RemovesItselfThenFires : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext& ctx, Message msg) override {
    ASSERT_TRUE(ctx.pipeline().Remove(this).ok());
    EXPECT_TRUE(ctx.IsRemoved());
    ctx.FireChannelRead(std::move(msg));
    ctx.FireChannelRead(std::string("after"));
  }
};

TEST(PipelineTest, AHandlerRemovedInsideItsOwnEventKeepsItsContextUntilItReturns) {
  auto h = std::make_shared<RemovesItselfThenFires>();
  std::weak_ptr<ChannelHandler> weak = h;
  auto ch = EmbeddedChannel::Create({std::move(h)});
  ASSERT_TRUE(ch->WriteInbound(std::string("x")));
  EXPECT_EQ(ch->ReadInbound<std::string>(), "x");
  EXPECT_EQ(ch->ReadInbound<std::string>(), "after");
  ch->RunPendingTasks();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(ch->pipeline().ContextCount(), 2);
  ch->Finish();
}

// Events already queued to a handler pinned to another executor when it is removed still
// pass on, in order, and its context is freed only after the last of them has left it
// (under ASan a premature free is a use-after-free).
TEST(PipelineTest, EventsQueuedToARemovedPinnedHandlerPassOnBeforeItIsFreed) {
  testing::TestExecutor other;
  auto ch = EmbeddedChannel::Create();
  constexpr int kRounds = 20;
  constexpr int kReads = 25;
  int next = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto probe = std::make_shared<ThreadProbe>();
    std::weak_ptr<ChannelHandler> weak = probe;
    ASSERT_TRUE(ch->pipeline().AddLast(&other, "pinned", std::move(probe)).ok());
    for (int j = 0; j < kReads; ++j) {
      ch->pipeline().FireChannelRead(std::to_string(round * kReads + j));
    }
    // The reads wait on `other`; remove the handler under them, from this thread.
    ASSERT_TRUE(ch->pipeline().Remove("pinned").ok());
    // Each pass moves everything queued on `other` to the loop and runs it there.
    for (int pass = 0; pass < 4; ++pass) {
      other.RunAndWait([] {});
      ch->RunPendingTasks();
    }
    for (int j = 0; j < kReads; ++j) {
      EXPECT_EQ(ch->ReadInbound<std::string>(), std::to_string(next++));
    }
    EXPECT_TRUE(weak.expired()) << "round " << round;
    EXPECT_EQ(ch->pipeline().ContextCount(), 2) << "round " << round;
  }
  ch->Finish();
  DrainWith(*ch, other);
}

// A write from a thread that is not the context's executor is queued there first; it
// reaches the head (and the outbound queue) in order with the others from that thread.
TEST(PipelineTest, AWriteFromAnotherThreadIsQueuedToTheContextsExecutor) {
  auto ch = EmbeddedChannel::Create({std::make_shared<Appender>("1")});
  ChannelHandlerContext* ctx = ch->pipeline().Context("handler#0");
  ASSERT_NE(ctx, nullptr);
  std::vector<ChannelFuture> writes;
  std::thread writer([&] {
    for (int i = 0; i < 10; ++i) writes.push_back(ctx->WriteAndFlush(std::to_string(i)));
  });
  writer.join();
  EXPECT_EQ(ch->OutboundCount(), 0);  // nothing ran on the writer's thread
  ch->RunPendingTasks();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ch->ReadOutbound<std::string>(), std::to_string(i));  // from its context on
    EXPECT_TRUE(writes[i].IsSuccess());
  }
  ch->Finish();
}

// A handler pinned to an executor that runs tasks inline on any thread leaves no task
// boundary to wait for: removed contexts are then kept until the pipeline goes.
TEST(PipelineTest, AnInlineExecutorKeepsRemovedContextsUntilThePipelineGoes) {
  auto ch = EmbeddedChannel::Create();
  ASSERT_TRUE(ch->pipeline()
                  .AddLast(ImmediateEventExecutor::Instance(), "inline",
                           std::make_shared<Appender>("i"))
                  .ok());
  ASSERT_TRUE(ch->pipeline().AddLast("x", std::make_shared<Appender>("x")).ok());
  ASSERT_TRUE(ch->pipeline().Remove("x").ok());
  ch->RunPendingTasks();
  EXPECT_EQ(ch->pipeline().ContextCount(), 4);
  ch->Finish();
}

// Deregistration alone keeps the handlers: the channel may be registered again.
TEST(PipelineTest, DeregisteringWithoutClosingKeepsTheHandlers) {
  TeardownProbe::Log log;
  auto ch = EmbeddedChannel::Create({std::make_shared<TeardownProbe>("a", &log)});
  ASSERT_TRUE(ch->Deregister().IsSuccess());
  ch->RunPendingTasks();
  EXPECT_THAT(log.Entries(), ElementsAre("a:unregistered"));
  EXPECT_THAT(ch->pipeline().Names(), ElementsAre("handler#0"));
}

}  // namespace
}  // namespace gyre
