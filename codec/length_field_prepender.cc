#include "gyre/codec/length_field_prepender.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gyre/channel/channel_handler_context.h"

namespace gyre {

absl::StatusOr<std::shared_ptr<LengthFieldPrepender>> LengthFieldPrepender::Create(
    LengthFieldPrependerOptions o) {
  const int n = o.length_field_length;
  if (n != 1 && n != 2 && n != 3 && n != 4 && n != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("LengthFieldPrepender: length_field_length must be 1, 2, 3, 4 or 8: ", n));
  }
  if (o.allocator == nullptr) o.allocator = PooledByteBufAllocator::Default();
  return std::shared_ptr<LengthFieldPrepender>(new LengthFieldPrepender(o));
}

void LengthFieldPrepender::Write(ChannelHandlerContext& ctx, Message msg, ChannelPromise promise) {
  ByteBuf* body = msg.Get<ByteBuf>();
  if (body == nullptr) {
    ctx.Write(std::move(msg), std::move(promise));
    return;
  }
  const int n = o_.length_field_length;
  const __int128 length = static_cast<__int128>(body->ReadableBytes()) + o_.length_adjustment +
                          (o_.length_includes_length_field ? n : 0);
  const char* fits = nullptr;
  if (length < 0) {
    promise.TryFailure(absl::InvalidArgumentError(absl::StrCat(
        "LengthFieldPrepender: adjusted frame length (", static_cast<int64_t>(length),
        ") is less than zero")));
    return;
  }
  if (n == 1 && length >= (1 << 8)) fits = "a byte";
  if (n == 2 && length >= (1 << 16)) fits = "a short integer";
  if (n == 3 && length >= (1 << 24)) fits = "a medium integer";
  if (n == 4 && length > static_cast<__int128>(UINT32_MAX)) fits = "an integer";
  if (n == 8 && length > static_cast<__int128>(INT64_MAX)) fits = "a long integer";
  if (fits != nullptr) {
    promise.TryFailure(absl::InvalidArgumentError(absl::StrCat(
        "LengthFieldPrepender: length does not fit into ", fits, ": ",
        static_cast<int64_t>(length))));
    return;
  }
  absl::StatusOr<ByteBuf> header = o_.allocator->Buffer(static_cast<size_t>(n));
  if (!header.ok()) {
    promise.TryFailure(header.status());
    return;
  }
  const bool le = o_.byte_order == ByteOrder::kLittleEndian;
  const uint64_t v = static_cast<uint64_t>(length);
  absl::Status s;
  switch (n) {
    case 1:
      s = header->WriteU8(static_cast<uint8_t>(v));
      break;
    case 2:
      s = le ? header->WriteU16LE(static_cast<uint16_t>(v)) : header->WriteU16(static_cast<uint16_t>(v));
      break;
    case 3:
      s = le ? header->WriteU24LE(static_cast<uint32_t>(v)) : header->WriteU24(static_cast<uint32_t>(v));
      break;
    case 4:
      s = le ? header->WriteU32LE(static_cast<uint32_t>(v)) : header->WriteU32(static_cast<uint32_t>(v));
      break;
    default:
      s = le ? header->WriteU64LE(v) : header->WriteU64(v);
      break;
  }
  if (!s.ok()) {
    promise.TryFailure(s);
    return;
  }
  // The header's own future is not watched: if it fails, the payload after it fails
  // the same way (same channel, same order).
  (void)ctx.Write(*std::move(header));
  ctx.Write(std::move(msg), std::move(promise));
}

}  // namespace gyre
