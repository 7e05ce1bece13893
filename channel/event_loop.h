// EventLoopGroup / EventLoop: executors that also own channels.
//
//   EventLoop* loop = group->Next();              // one loop per channel, for its life
//   ChannelFuture registered = group->Register(channel);
//
// An EventLoop is an EventExecutor (one thread) and an EventLoopGroup of one (Next()
// returns itself). A channel registered with a loop has all its I/O and events run on
// that loop's thread until it is deregistered.
//
// Thread safety: every method is thread-safe.
// Ownership: a group owns its loops; a loop keeps its registered channels alive
// (shared_ptr) until they are deregistered.
#ifndef GYRE_CHANNEL_EVENT_LOOP_H_
#define GYRE_CHANNEL_EVENT_LOOP_H_

#include <memory>

#include "gyre/channel/channel_future.h"
#include "gyre/concurrent/event_executor.h"
#include "gyre/concurrent/event_executor_group.h"

namespace gyre {

class Channel;
class EventLoop;

class EventLoopGroup : public virtual EventExecutorGroup {
 public:
  // The next loop, round-robin.
  EventLoop* Next() { return NextEventLoop(); }
  virtual EventLoop* NextEventLoop() = 0;

  // Registers `channel` with Next(). The future fails with InvalidArgument for a null
  // channel, FailedPrecondition if it is already registered or the loop is shut down.
  virtual ChannelFuture Register(std::shared_ptr<Channel> channel);
};

class EventLoop : public virtual EventExecutor, public EventLoopGroup {
 public:
  EventLoop* Next() { return this; }
  EventLoop* NextEventLoop() override { return this; }
  EventExecutor* NextExecutor() override { return this; }
  std::vector<EventExecutor*> executors() const override { return EventExecutor::executors(); }

  // The group this loop belongs to; null for a standalone loop.
  EventLoopGroup* parent() const override = 0;

  // Registers `channel` with this loop (see EventLoopGroup::Register).
  ChannelFuture Register(std::shared_ptr<Channel> channel) override;

  // Number of channels registered with this loop now.
  virtual int RegisteredChannels() const { return 0; }
};

}  // namespace gyre

#endif  // GYRE_CHANNEL_EVENT_LOOP_H_
