#include "gyre/codec/codec_status.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace gyre {

absl::Status TooLongFrameError(absl::string_view detail) {
  absl::Status s(absl::StatusCode::kResourceExhausted, absl::StrCat("TooLongFrame: ", detail));
  s.SetPayload(kTooLongFramePayload, absl::Cord());
  return s;
}

absl::Status CorruptedFrameError(absl::string_view detail) {
  absl::Status s(absl::StatusCode::kInvalidArgument, absl::StrCat("CorruptedFrame: ", detail));
  s.SetPayload(kCorruptedFramePayload, absl::Cord());
  return s;
}

bool IsTooLongFrame(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kTooLongFramePayload).has_value();
}

bool IsCorruptedFrame(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kCorruptedFramePayload).has_value();
}

}  // namespace gyre
