#include "gyre/channel/single_thread_event_loop.h"

#include <utility>

namespace gyre {

SingleThreadEventLoop::SingleThreadEventLoop(EventLoopGroup* parent, ExecutorOptions options)
    : SingleThreadEventExecutor(parent, std::move(options)), parent_(parent) {}

SingleThreadEventLoop::~SingleThreadEventLoop() = default;

ExecutorSnapshot SingleThreadEventLoop::Snapshot() const {
  ExecutorSnapshot s = SingleThreadEventExecutor::Snapshot();
  s.event_loop = true;
  s.registered_channels = RegisteredChannels();
  // Relaxed: a statistic.
  s.io_time = absl::Nanoseconds(io_nanos_.load(std::memory_order_relaxed));
  return s;
}

void SingleThreadEventLoop::AddChannel(std::shared_ptr<Channel> channel) {
  loop_affinity_.AssertOnLoop();
  Channel* key = channel.get();
  if (channels_.emplace(key, std::move(channel)).second) {
    registered_.fetch_add(1, std::memory_order_relaxed);
  }
}

void SingleThreadEventLoop::RemoveChannel(Channel* channel) {
  loop_affinity_.AssertOnLoop();
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  released_.push_back(std::move(it->second));
  channels_.erase(it);
  draining_.erase(channel);
  registered_.fetch_sub(1, std::memory_order_relaxed);
}

void SingleThreadEventLoop::ReleaseRemovedChannels() { released_.clear(); }

void SingleThreadEventLoop::CloseAllChannels() {
  if (channels_.empty()) return;
  std::vector<std::shared_ptr<Channel>> all;
  all.reserve(channels_.size());
  for (auto& [ptr, ch] : channels_) all.push_back(ch);
  for (auto& ch : all) ch->unsafe().Close(ChannelPromise(this));
  released_.clear();
}

void SingleThreadEventLoop::ShutdownChannelsStep() {
  if (NanosUntilShutdownTimeout() <= 0) {
    CloseAllChannels();  // the timeout elapsed: pending writes fail
    return;
  }
  // Every registered channel is draining already: nothing to ask (the common pass).
  if (channels_.size() == draining_.size()) return;
  std::vector<std::shared_ptr<Channel>> asked;
  asked.reserve(channels_.size() - draining_.size());
  for (auto& [ptr, ch] : channels_) {
    if (!draining_.contains(ptr)) asked.push_back(ch);
  }
  for (auto& ch : asked) {
    if (ch->BeginShutdownDrain()) {
      // Still registered afterwards: it drains (it may have closed inside the call).
      if (channels_.contains(ch.get())) draining_.insert(ch.get());
    } else if (ch->IsOpen()) {
      ch->unsafe().Close(ChannelPromise(this));
    }
  }
  released_.clear();
}

void SingleThreadEventLoop::Cleanup() {
  CloseAllChannels();
  channels_.clear();
  draining_.clear();
  released_.clear();
}

}  // namespace gyre
