// Pipeline benchmarks: the cost of passing an event from one handler to the next.
// An inbound read and an outbound flush go through `handlers` pass-through handlers on
// the channel's own loop thread (an embedded channel: the benchmark thread is its loop),
// so every hop runs inline; the figure per operation divided by the handler count is the
// price of one hop.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "gyre/channel/channel_handler.h"
#include "gyre/channel/channel_handler_context.h"
#include "gyre/channel/channel_pipeline.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace {

// Every method passes the event on (the ChannelHandler defaults).
class PassThrough final : public ChannelDuplexHandler {};

// Consumes reads, so nothing reaches the tail's queue.
class Sink final : public ChannelInboundHandler {
 public:
  void ChannelRead(ChannelHandlerContext&, Message msg) override {
    benchmark::DoNotOptimize(msg);
  }
};

std::shared_ptr<testing::EmbeddedChannel> ChannelWith(int64_t handlers) {
  std::vector<std::shared_ptr<ChannelHandler>> list;
  for (int64_t i = 0; i < handlers; ++i) list.push_back(std::make_shared<PassThrough>());
  list.push_back(std::make_shared<Sink>());
  return testing::EmbeddedChannel::Create(std::move(list));
}

void BM_PipelineRead(benchmark::State& state) {
  auto ch = ChannelWith(state.range(0));
  bench::AllocationCounter allocs;
  int64_t n = 0;
  for (auto _ : state) ch->pipeline().FireChannelRead(Message(n++));
  allocs.Report(state, static_cast<double>(state.iterations()));
  state.counters["hops"] = static_cast<double>(state.range(0) + 1);
  ch->Finish();
}
BENCHMARK(BM_PipelineRead)->Arg(1)->Arg(8)->Apply(bench::FixedIterations);

void BM_PipelineFlush(benchmark::State& state) {
  auto ch = ChannelWith(state.range(0));
  bench::AllocationCounter allocs;
  for (auto _ : state) ch->pipeline().Flush();
  allocs.Report(state, static_cast<double>(state.iterations()));
  state.counters["hops"] = static_cast<double>(state.range(0) + 1);
  ch->Finish();
}
BENCHMARK(BM_PipelineFlush)->Arg(1)->Arg(8)->Apply(bench::FixedIterations);

}  // namespace
}  // namespace gyre
