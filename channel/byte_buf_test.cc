#include "gyre/channel/byte_buf.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/concurrent/internal/log.h"

namespace gyre {
namespace {

// Runs every test against both allocators.
class ByteBufTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto a = PooledByteBufAllocator::Create();
      ASSERT_TRUE(a.ok());
      alloc_ = std::move(*a);
    } else {
      auto a = UnpooledByteBufAllocator::Create();
      ASSERT_TRUE(a.ok());
      alloc_ = std::move(*a);
    }
  }
  void TearDown() override { EXPECT_EQ(alloc_->LiveBuffers(), 0); }

  ByteBuf Make(size_t initial, size_t max = ByteBufAllocator::kDefaultMaxCapacity) {
    absl::StatusOr<ByteBuf> buf = alloc_->Buffer(initial, max);
    EXPECT_TRUE(buf.ok()) << buf.status();
    return buf.ok() ? std::move(*buf) : ByteBuf();
  }

  std::unique_ptr<ByteBufAllocator> alloc_;
};

INSTANTIATE_TEST_SUITE_P(Allocators, ByteBufTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Pooled" : "Unpooled"; });

TEST_P(ByteBufTest, FreshBufferIndices) {
  ByteBuf buf = Make(16, 100);
  EXPECT_EQ(buf.reader_index(), 0u);
  EXPECT_EQ(buf.writer_index(), 0u);
  EXPECT_EQ(buf.capacity(), 16u);
  EXPECT_EQ(buf.max_capacity(), 100u);
  EXPECT_EQ(buf.ReadableBytes(), 0u);
  EXPECT_EQ(buf.WritableBytes(), 16u);
  EXPECT_EQ(buf.RefCount(), 1);
  EXPECT_TRUE(buf.OwnsReference());
}

TEST_P(ByteBufTest, InitialAboveMaxIsInvalid) {
  EXPECT_EQ(alloc_->Buffer(10, 5).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ByteBufTest, EveryWidthAndEndianness) {
  ByteBuf buf = Make(8);
  ASSERT_TRUE(buf.WriteU8(0xAB).ok());
  ASSERT_TRUE(buf.WriteI8(-2).ok());
  ASSERT_TRUE(buf.WriteU16(0x1234).ok());
  ASSERT_TRUE(buf.WriteU16LE(0x1234).ok());
  ASSERT_TRUE(buf.WriteI16(-300).ok());
  ASSERT_TRUE(buf.WriteI16LE(-300).ok());
  ASSERT_TRUE(buf.WriteU24(0xABCDEF).ok());
  ASSERT_TRUE(buf.WriteU24LE(0xABCDEF).ok());
  ASSERT_TRUE(buf.WriteI24(-5).ok());
  ASSERT_TRUE(buf.WriteI24LE(-70000).ok());
  ASSERT_TRUE(buf.WriteU32(0xDEADBEEF).ok());
  ASSERT_TRUE(buf.WriteU32LE(0xDEADBEEF).ok());
  ASSERT_TRUE(buf.WriteI32(-123456789).ok());
  ASSERT_TRUE(buf.WriteI32LE(-123456789).ok());
  ASSERT_TRUE(buf.WriteU64(0x0102030405060708ull).ok());
  ASSERT_TRUE(buf.WriteU64LE(0x0102030405060708ull).ok());
  ASSERT_TRUE(buf.WriteI64(-1234567890123ll).ok());
  ASSERT_TRUE(buf.WriteI64LE(-1234567890123ll).ok());
  EXPECT_EQ(buf.writer_index(), 1u + 1 + 2 * 4 + 3 * 4 + 4 * 4 + 8 * 4);

  // Byte order on the wire.
  EXPECT_EQ(*buf.GetU8(2), 0x12);
  EXPECT_EQ(*buf.GetU8(3), 0x34);
  EXPECT_EQ(*buf.GetU8(4), 0x34);
  EXPECT_EQ(*buf.GetU8(5), 0x12);
  EXPECT_EQ(*buf.GetU8(10), 0xAB);  // U24 big-endian
  EXPECT_EQ(*buf.GetU8(13), 0xEF);  // U24 little-endian
  EXPECT_EQ(*buf.GetU16LE(2), 0x3412);

  EXPECT_EQ(*buf.ReadU8(), 0xAB);
  EXPECT_EQ(*buf.ReadI8(), -2);
  EXPECT_EQ(*buf.ReadU16(), 0x1234);
  EXPECT_EQ(*buf.ReadU16LE(), 0x1234);
  EXPECT_EQ(*buf.ReadI16(), -300);
  EXPECT_EQ(*buf.ReadI16LE(), -300);
  EXPECT_EQ(*buf.ReadU24(), 0xABCDEFu);
  EXPECT_EQ(*buf.ReadU24LE(), 0xABCDEFu);
  EXPECT_EQ(*buf.ReadI24(), -5);
  EXPECT_EQ(*buf.ReadI24LE(), -70000);
  EXPECT_EQ(*buf.ReadU32(), 0xDEADBEEFu);
  EXPECT_EQ(*buf.ReadU32LE(), 0xDEADBEEFu);
  EXPECT_EQ(*buf.ReadI32(), -123456789);
  EXPECT_EQ(*buf.ReadI32LE(), -123456789);
  EXPECT_EQ(*buf.ReadU64(), 0x0102030405060708ull);
  EXPECT_EQ(*buf.ReadU64LE(), 0x0102030405060708ull);
  EXPECT_EQ(*buf.ReadI64(), -1234567890123ll);
  EXPECT_EQ(*buf.ReadI64LE(), -1234567890123ll);
  EXPECT_EQ(buf.ReadableBytes(), 0u);
}

TEST_P(ByteBufTest, GetSetDoNotMoveIndices) {
  ByteBuf buf = Make(16);
  ASSERT_TRUE(buf.SetU32(4, 0x01020304).ok());
  ASSERT_TRUE(buf.SetU64LE(8, 42).ok());
  EXPECT_EQ(buf.writer_index(), 0u);
  EXPECT_EQ(*buf.GetU32(4), 0x01020304u);
  EXPECT_EQ(*buf.GetU64LE(8), 42u);
  EXPECT_EQ(*buf.GetI24(4), 0x010203);
  EXPECT_EQ(buf.reader_index(), 0u);
}

TEST_P(ByteBufTest, BoundsErrorsChangeNothing) {
  ByteBuf buf = Make(8, 8);
  EXPECT_EQ(buf.GetU64(1).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.SetU16(7, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.GetU8(SIZE_MAX).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.SetU32(SIZE_MAX - 1, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.ReadU8().status().code(), absl::StatusCode::kOutOfRange);
  ASSERT_TRUE(buf.WriteU32(7).ok());
  EXPECT_EQ(buf.ReadU64().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.reader_index(), 0u);
  ASSERT_TRUE(buf.WriteU32(8).ok());
  EXPECT_EQ(buf.WriteU8(1).code(), absl::StatusCode::kOutOfRange);  // max capacity 8
  EXPECT_EQ(buf.writer_index(), 8u);
  EXPECT_EQ(buf.Skip(9).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.SetReaderIndex(9).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.SetWriterIndex(9).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.SetIndex(5, 4).code(), absl::StatusCode::kOutOfRange);
  char dst[16];
  EXPECT_EQ(buf.ReadBytes(dst, 9).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.GetBytes(4, dst, 5).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.Slice(4, 5).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.EnsureWritable(1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(buf.EnsureWritable(SIZE_MAX).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(*buf.ReadU32(), 7u);
}

TEST_P(ByteBufTest, GrowsUpToMaxCapacity) {
  ByteBuf buf = Make(0, 1000);
  EXPECT_EQ(buf.capacity(), 0u);
  ASSERT_TRUE(buf.WriteU8(1).ok());
  EXPECT_EQ(buf.capacity(), 64u);
  ASSERT_TRUE(buf.WriteZero(100).ok());
  EXPECT_EQ(buf.capacity(), 128u);
  ASSERT_TRUE(buf.WriteZero(500).ok());
  EXPECT_EQ(buf.capacity(), 1000u);  // 1024 capped at the max
  EXPECT_EQ(*buf.GetU8(0), 1);
  EXPECT_EQ(buf.WriteZero(400).code(), absl::StatusCode::kOutOfRange);
  ASSERT_TRUE(buf.WriteZero(399).ok());
  EXPECT_EQ(buf.WritableBytes(), 0u);
}

TEST_P(ByteBufTest, GrowthKeepsContents) {
  ByteBuf buf = Make(4);
  std::string expected;
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(buf.WriteU8(static_cast<uint8_t>(i)).ok());
    expected.push_back(static_cast<char>(i));
  }
  EXPECT_EQ(buf.ReadableView(), expected);
}

TEST_P(ByteBufTest, BytesAndViews) {
  ByteBuf buf = Make(4);
  ASSERT_TRUE(buf.WriteBytes("hello, world").ok());
  EXPECT_EQ(buf.ReadableView(), "hello, world");
  EXPECT_EQ(*buf.BytesBefore(','), 5);
  EXPECT_EQ(*buf.BytesBefore('z'), -1);
  EXPECT_EQ(*buf.IndexOf(0, 100, 'o'), 4);
  // Backwards from past the end: the search is clamped to the capacity, so the
  // bytes past the writer index take part; define them (a recycled block keeps
  // whatever its previous buffer wrote there).
  ASSERT_TRUE(buf.SetBytes(buf.writer_index(), std::string(buf.WritableBytes(), '.')).ok());
  EXPECT_EQ(*buf.IndexOf(100, 0, 'o'), 8);
  EXPECT_EQ(*buf.IndexOf(5, 5, 'o'), -1);
  char head[5];
  ASSERT_TRUE(buf.ReadBytes(head, 5).ok());
  EXPECT_EQ(std::string(head, 5), "hello");
  ASSERT_TRUE(buf.Skip(2).ok());
  EXPECT_EQ(buf.ToString(), "world");
  iovec iov[2];
  ASSERT_EQ(buf.ReadableIovecs(absl::MakeSpan(iov)), 1u);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "world");
  absl::StatusOr<ByteBuf> copy = buf.ReadBytes(3);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(copy->ToString(), "wor");
  EXPECT_EQ(buf.ToString(), "ld");
  ASSERT_TRUE(buf.SetBytes(0, "HE").ok());
  EXPECT_EQ(*buf.GetU8(0), 'H');
}

TEST_P(ByteBufTest, WriteBytesFromBufferIncludingItself) {
  ByteBuf a = Make(4);
  ASSERT_TRUE(a.WriteBytes("abc").ok());
  ByteBuf b = Make(1);
  ASSERT_TRUE(b.WriteBytes(a).ok());
  EXPECT_EQ(b.ToString(), "abc");
  EXPECT_EQ(a.reader_index(), 0u);
  // Self-append with growth: the source moves while growing.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(a.WriteBytes(a).ok());
  EXPECT_EQ(a.ReadableBytes(), 3u * 64);
  EXPECT_EQ(a.ToString().substr(189), "abc");
}

TEST_P(ByteBufTest, DiscardReadBytesClearAndMarks) {
  ByteBuf buf = Make(16);
  ASSERT_TRUE(buf.WriteBytes("0123456789").ok());
  ASSERT_TRUE(buf.Skip(4).ok());
  buf.MarkReaderIndex();
  ASSERT_TRUE(buf.Skip(2).ok());
  buf.MarkWriterIndex();
  ASSERT_TRUE(buf.DiscardReadBytes().ok());
  EXPECT_EQ(buf.reader_index(), 0u);
  EXPECT_EQ(buf.ToString(), "6789");
  ASSERT_TRUE(buf.ResetReaderIndex().ok());  // mark 4 -> 0
  EXPECT_EQ(buf.reader_index(), 0u);
  ASSERT_TRUE(buf.WriteU8('x').ok());
  ASSERT_TRUE(buf.ResetWriterIndex().ok());  // mark 10 -> 4
  EXPECT_EQ(buf.writer_index(), 4u);
  buf.MarkReaderIndex();
  ASSERT_TRUE(buf.Skip(3).ok());
  ASSERT_TRUE(buf.ResetReaderIndex().ok());
  EXPECT_EQ(buf.ToString(), "6789");
  buf.Clear();
  EXPECT_EQ(buf.ReadableBytes(), 0u);
  EXPECT_EQ(buf.ResetWriterIndex().code(), absl::StatusCode::kOk);
  buf.Clear();
  ASSERT_TRUE(buf.WriteBytes("ab").ok());
  ASSERT_TRUE(buf.Skip(2).ok());
  buf.MarkReaderIndex();
  buf.Clear();
  EXPECT_EQ(buf.ResetReaderIndex().code(), absl::StatusCode::kOutOfRange);
}

TEST_P(ByteBufTest, SlicesShareMemoryAndRefCount) {
  ByteBuf buf = Make(16);
  ASSERT_TRUE(buf.WriteBytes("abcdefgh").ok());
  absl::StatusOr<ByteBuf> slice = buf.Slice(2, 4);
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(slice->ToString(), "cdef");
  EXPECT_EQ(slice->capacity(), 4u);
  EXPECT_EQ(slice->max_capacity(), 4u);
  EXPECT_FALSE(slice->OwnsReference());
  EXPECT_EQ(slice->RefCount(), 1);
  ASSERT_TRUE(slice->SetU8(0, 'C').ok());
  EXPECT_EQ(*buf.GetU8(2), 'C');  // same memory
  EXPECT_EQ(slice->SetU8(4, 'x').code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(slice->WriteU8(1).code(), absl::StatusCode::kOutOfRange);  // cannot grow

  absl::StatusOr<ByteBuf> retained = buf.RetainedSlice();
  ASSERT_TRUE(retained.ok());
  EXPECT_EQ(buf.RefCount(), 2);
  EXPECT_EQ(slice->RefCount(), 2);
  *retained = ByteBuf();  // releases its reference
  EXPECT_EQ(buf.RefCount(), 1);

  absl::StatusOr<ByteBuf> dup = buf.Duplicate();
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->ToString(), buf.ToString());
  ASSERT_TRUE(dup->Skip(1).ok());
  EXPECT_EQ(buf.reader_index(), 0u);  // own indices
  ASSERT_TRUE(dup->WriteZero(100).ok());  // grows the shared root
  EXPECT_GE(buf.capacity(), 108u);
  EXPECT_EQ(*buf.GetU8(0), 'a');

  // Releasing through the root frees; derived views then report, never touch memory.
  EXPECT_TRUE(buf.Release());
  EXPECT_EQ(alloc_->LiveBuffers(), 0);
  EXPECT_EQ(slice->RefCount(), 0);
  EXPECT_EQ(slice->GetU8(0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dup->ReadU8().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dup->WriteU8(1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buf.ReadU8().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(buf.ReadableView().empty());
  EXPECT_EQ(buf.Slice().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buf.Retain().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(buf.Release());  // over-release: refused
}

TEST_P(ByteBufTest, CopyIsIndependent) {
  ByteBuf buf = Make(8);
  ASSERT_TRUE(buf.WriteBytes("xyz").ok());
  absl::StatusOr<ByteBuf> copy = buf.Copy();
  ASSERT_TRUE(copy.ok());
  ASSERT_TRUE(buf.SetU8(0, 'X').ok());
  EXPECT_EQ(copy->ToString(), "xyz");
  EXPECT_EQ(copy->RefCount(), 1);
  EXPECT_EQ(alloc_->LiveBuffers(), 2);
}

TEST_P(ByteBufTest, ReadSlices) {
  ByteBuf buf = Make(8);
  ASSERT_TRUE(buf.WriteBytes("headbody").ok());
  absl::StatusOr<ByteBuf> head = buf.ReadSlice(4);
  ASSERT_TRUE(head.ok());
  absl::StatusOr<ByteBuf> body = buf.ReadRetainedSlice(4);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(head->ToString(), "head");
  EXPECT_EQ(body->ToString(), "body");
  EXPECT_EQ(buf.ReadableBytes(), 0u);
  buf = ByteBuf();
  EXPECT_EQ(body->ToString(), "body");  // the retained slice keeps it alive
  EXPECT_EQ(alloc_->LiveBuffers(), 1);
  EXPECT_TRUE(body->Release());
  EXPECT_EQ(alloc_->LiveBuffers(), 0);
}

TEST_P(ByteBufTest, RetainReleaseAndOwnership) {
  ByteBuf buf = Make(8);
  ASSERT_TRUE(buf.Retain().ok());
  EXPECT_EQ(buf.RefCount(), 2);
  EXPECT_FALSE(buf.Release());  // balances this handle's Retain()
  EXPECT_TRUE(buf.OwnsReference());
  EXPECT_EQ(buf.RefCount(), 1);
  EXPECT_EQ(buf.Retain(0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(buf.Release(2));  // over-release refused
  EXPECT_EQ(buf.RefCount(), 1);
  EXPECT_TRUE(buf.Release());  // the handle's own reference
  EXPECT_FALSE(buf.OwnsReference());
  EXPECT_EQ(buf.RefCount(), 0);
  EXPECT_EQ(alloc_->LeakedBuffers(), 0);
}

TEST_P(ByteBufTest, ReleaseThroughBorrowedSlice) {
  ByteBuf buf = Make(8);
  absl::StatusOr<ByteBuf> slice = buf.Slice(0, 4);
  ASSERT_TRUE(slice.ok());
  EXPECT_TRUE(slice->Release());  // Netty style: frees the root
  EXPECT_EQ(alloc_->LiveBuffers(), 0);
  buf = ByteBuf();  // its reference is already gone: nothing more happens
  EXPECT_EQ(alloc_->LeakedBuffers(), 0);
}

TEST_P(ByteBufTest, MovedHandleIsEmpty) {
  ByteBuf a = Make(8);
  ByteBuf b = std::move(a);
  EXPECT_FALSE(static_cast<bool>(a));  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(a.WriteU8(1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.ReadU8().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a.EnsureWritable(1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(a.Release());
  EXPECT_EQ(b.RefCount(), 1);
  EXPECT_EQ(alloc_->LiveBuffers(), 1);
}

TEST_P(ByteBufTest, LeakIsCountedAndReclaimed) {
  {
    ByteBuf buf = Make(8);
    ASSERT_TRUE(buf.Retain().ok());  // never balanced
  }
  EXPECT_EQ(alloc_->LeakedBuffers(), 1);
  EXPECT_EQ(alloc_->LiveBuffers(), 0);
  EXPECT_EQ(alloc_->UsedMemory(), 0);
}

#ifndef NDEBUG
TEST_P(ByteBufTest, LeakLogNamesTheAllocationSite) {
  std::vector<std::string> lines;
  internal::SetLogSinkForTesting(
      [&lines](internal::LogSeverity, const char*, int, const std::string& message) {
        lines.push_back(message);
      });
  {
    ByteBuf buf = Make(8);  // the site is Make()'s call to Buffer() in this file
    ASSERT_TRUE(buf.Retain().ok());
  }
  internal::SetLogSinkForTesting(nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("LEAK"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("byte_buf_test.cc"), std::string::npos) << lines[0];
}
#endif

TEST_P(ByteBufTest, CopiedBuffer) {
  absl::StatusOr<ByteBuf> buf = alloc_->CopiedBuffer("abc");
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(buf->ToString(), "abc");
}

TEST(ByteBufHandleTest, EmptyHandle) {
  ByteBuf buf;
  EXPECT_EQ(buf.capacity(), 0u);
  EXPECT_EQ(buf.RefCount(), 0);
  EXPECT_EQ(buf.GetU32(0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buf.SetReaderIndex(0).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buf.IndexOf(0, 1, 0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(buf.alloc(), nullptr);
  EXPECT_EQ(sizeof(ByteBuf), sizeof(void*));
}

}  // namespace
}  // namespace gyre
