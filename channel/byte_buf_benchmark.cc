// ByteBuf benchmarks: allocate + write 64 B + release (pooled, unpooled, new[]), and
// integer read/write throughput.
#include <cstdint>
#include <cstring>
#include <memory>

#include "benchmark/benchmark.h"
#include "gyre/benchmarks/alloc/alloc_counter.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"

namespace gyre {
namespace {

constexpr char kPayload[64] = "0123456789abcdef0123456789abcdef0123456789abcdef012345678901234";

void AllocWriteRelease(benchmark::State& state, ByteBufAllocator* alloc) {
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    absl::StatusOr<ByteBuf> buf = alloc->Buffer(64);
    if (!buf.ok() || !buf->WriteBytes(absl::string_view(kPayload, 64)).ok()) {
      state.SkipWithError("allocation failed");
      break;
    }
    benchmark::DoNotOptimize(buf->ReadableView().data());
  }
  state.SetBytesProcessed(state.iterations() * 64);
  // With Threads(n), every thread's allocations are in the shared total: divide by all.
  allocs.Report(state, static_cast<double>(state.iterations() * state.threads()));
}

void BM_AllocWrite64Release_Pooled(benchmark::State& state) {
  AllocWriteRelease(state, PooledByteBufAllocator::Default());
}
BENCHMARK(BM_AllocWrite64Release_Pooled);

void BM_AllocWrite64Release_Unpooled(benchmark::State& state) {
  AllocWriteRelease(state, UnpooledByteBufAllocator::Default());
}
BENCHMARK(BM_AllocWrite64Release_Unpooled);

void BM_AllocWrite64Release_NewArray(benchmark::State& state) {
  for (auto _ : state) {
    std::unique_ptr<char[]> p(new char[64]);
    std::memcpy(p.get(), kPayload, 64);
    benchmark::DoNotOptimize(p.get());
  }
  state.SetBytesProcessed(state.iterations() * 64);
}
BENCHMARK(BM_AllocWrite64Release_NewArray);

// Several threads allocating and releasing from the shared pooled allocator.
void BM_AllocWrite64Release_PooledThreads(benchmark::State& state) {
  AllocWriteRelease(state, PooledByteBufAllocator::Default());
}
BENCHMARK(BM_AllocWrite64Release_PooledThreads)->Threads(2);

constexpr int kInts = 1024;

// kInts writes of a T with `kWrite` into a cleared buffer per iteration.
template <typename T, absl::Status (ByteBuf::*kWrite)(T)>
void BM_WriteInts(benchmark::State& state) {
  absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->Buffer(kInts * sizeof(T));
  for (auto _ : state) {
    buf->Clear();
    for (int i = 0; i < kInts; ++i) {
      benchmark::DoNotOptimize(((*buf).*kWrite)(static_cast<T>(i)));
    }
  }
  state.SetItemsProcessed(state.iterations() * kInts);
  state.SetBytesProcessed(state.iterations() * kInts * sizeof(T));
}
BENCHMARK(BM_WriteInts<uint32_t, &ByteBuf::WriteU32>)->Name("BM_WriteU32");
BENCHMARK(BM_WriteInts<uint64_t, &ByteBuf::WriteU64LE>)->Name("BM_WriteU64LE");

// kInts reads of a T with `kRead` from the start of a buffer filled by `kWrite`.
template <typename T, absl::StatusOr<T> (ByteBuf::*kRead)(), absl::Status (ByteBuf::*kWrite)(T)>
void BM_ReadInts(benchmark::State& state) {
  absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->Buffer(kInts * sizeof(T));
  for (int i = 0; i < kInts; ++i) (void)((*buf).*kWrite)(static_cast<T>(i));
  for (auto _ : state) {
    (void)buf->SetReaderIndex(0);
    uint64_t sum = 0;
    for (int i = 0; i < kInts; ++i) sum += *((*buf).*kRead)();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * kInts);
  state.SetBytesProcessed(state.iterations() * kInts * sizeof(T));
}
BENCHMARK(BM_ReadInts<uint32_t, &ByteBuf::ReadU32, &ByteBuf::WriteU32>)->Name("BM_ReadU32");
BENCHMARK(BM_ReadInts<uint8_t, &ByteBuf::ReadU8, &ByteBuf::WriteU8>)->Name("BM_ReadU8");



// Baseline: raw big-endian stores into a plain array.
void BM_RawArrayWriteU32(benchmark::State& state) {
  std::unique_ptr<uint8_t[]> p(new uint8_t[kInts * 4]);
  for (auto _ : state) {
    for (int i = 0; i < kInts; ++i) {
      uint32_t v = __builtin_bswap32(static_cast<uint32_t>(i));
      std::memcpy(p.get() + i * 4, &v, 4);
    }
    benchmark::DoNotOptimize(p.get());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kInts);
}
BENCHMARK(BM_RawArrayWriteU32);

void BM_SliceAndRelease(benchmark::State& state) {
  absl::StatusOr<ByteBuf> buf = PooledByteBufAllocator::Default()->Buffer(256);
  (void)buf->WriteZero(256);
  bench::AllocationCounter allocs;
  for (auto _ : state) {
    absl::StatusOr<ByteBuf> slice = buf->RetainedSlice(16, 64);
    benchmark::DoNotOptimize(slice->ReadableView().data());
  }
  allocs.Report(state);
}
BENCHMARK(BM_SliceAndRelease);

}  // namespace
}  // namespace gyre
