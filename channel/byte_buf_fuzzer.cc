// A libFuzzer target for the ByteBuf API: the input is a program of operations run on
// a pooled buffer (with a memory limit) and on a std::string model of its contents;
// any difference, crash or sanitizer report is a finding. byte_buf_fuzz_test runs it on
// generated inputs so it cannot rot; with clang, `-fsanitize=fuzzer,address` builds it
// as a fuzzer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using gyre::ByteBuf;
  auto pool = gyre::PooledByteBufAllocator::Create({.max_memory = 1 << 16});
  GYRE_CHECK(pool.ok());
  {
    size_t pos = 0;
    auto next = [&]() -> uint8_t { return pos < size ? data[pos++] : 0; };
    const size_t max_capacity = 1 + next() * 37;
    absl::StatusOr<ByteBuf> made = (*pool)->Buffer(next() % (max_capacity + 1), max_capacity);
    GYRE_CHECK(made.ok()) << made.status();
    ByteBuf buf = std::move(*made);
    std::string model;  // the readable bytes
    std::vector<ByteBuf> derived;
    while (pos < size) {
      const uint8_t op = next() % 12;
      const uint8_t arg = next();
      switch (op) {
        case 0: {
          absl::Status s = buf.WriteU32(0x01020304u * arg);
          if (s.ok()) {
            const uint32_t v = 0x01020304u * arg;
            const char be[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
            model.append(be, 4);
          }
          break;
        }
        case 1: {
          absl::StatusOr<uint32_t> v = buf.ReadU32();
          GYRE_CHECK(v.ok() == (model.size() >= 4));
          if (v.ok()) {
            const uint32_t want = uint32_t{uint8_t(model[0])} << 24 |
                                  uint32_t{uint8_t(model[1])} << 16 |
                                  uint32_t{uint8_t(model[2])} << 8 | uint8_t(model[3]);
            GYRE_CHECK(*v == want);
            model.erase(0, 4);
          }
          break;
        }
        case 2: {
          std::string bytes(arg % 50, static_cast<char>(arg));
          if (buf.WriteBytes(bytes).ok()) model += bytes;
          break;
        }
        case 3:
          if (buf.Skip(arg % 9).ok()) model.erase(0, arg % 9);
          else GYRE_CHECK(model.size() < arg % 9u);
          break;
        case 4:
          GYRE_CHECK(buf.DiscardReadBytes().ok());
          GYRE_CHECK(buf.reader_index() == 0);
          break;
        case 5: {
          absl::StatusOr<ByteBuf> s = buf.Slice(arg % 16, next() % 16);
          if (s.ok()) derived.push_back(std::move(*s));
          break;
        }
        case 6: {
          absl::StatusOr<ByteBuf> s = buf.RetainedDuplicate();
          if (s.ok()) derived.push_back(std::move(*s));
          break;
        }
        case 7:
          if (!derived.empty()) {
            ByteBuf& d = derived[arg % derived.size()];
            (void)d.GetU64LE(next());
            (void)d.SetU16(next(), arg);
            (void)d.WriteU8(arg);
            (void)d.ReadI24();
            // Writes through a view may change the shared bytes: resync the model.
            model = std::string(buf.ReadableView());
          }
          break;
        case 8:
          if (!derived.empty()) derived.erase(derived.begin() + arg % derived.size());
          break;
        case 9:
          (void)buf.GetU16(arg);
          (void)buf.SetU8(arg, arg);
          model = std::string(buf.ReadableView());
          break;
        case 10:
          (void)buf.IndexOf(next(), next(), arg);
          break;
        case 11:
          buf.Clear();
          model.clear();
          break;
      }
      if (buf.RefCount() > 0) {
        GYRE_CHECK(buf.ReadableView() == model);
        GYRE_CHECK(buf.writer_index() <= buf.capacity());
        GYRE_CHECK(buf.capacity() <= buf.max_capacity());
      }
    }
  }
  GYRE_CHECK((*pool)->LiveBuffers() == 0);
  GYRE_CHECK((*pool)->LeakedBuffers() == 0);
  return 0;
}
