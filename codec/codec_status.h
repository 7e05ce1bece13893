// The two failures every decoder in //codec reports: a frame that is too long and a
// frame that is malformed.
//
//   absl::Status s = TooLongFrameError("frame length 70000 exceeds 65536");
//   IsTooLongFrame(s);     // true
//   s.code();              // absl::StatusCode::kResourceExhausted
//   s.message();           // "TooLongFrame: frame length 70000 exceeds 65536"
//
// How they are told apart:
//
//   kind           code                 message prefix     payload type URL
//   TooLongFrame   kResourceExhausted   "TooLongFrame: "   kTooLongFramePayload
//   CorruptedFrame kInvalidArgument     "CorruptedFrame: " kCorruptedFramePayload
//
// Test with IsTooLongFrame / IsCorruptedFrame (they look at the payload, so a
// ResourceExhausted from an allocator is never mistaken for a frame error). Decoders
// raise them through ExceptionCaught.
//
// Thread safety: the functions are thread-safe (pure).
#ifndef GYRE_CODEC_CODEC_STATUS_H_
#define GYRE_CODEC_CODEC_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gyre {

inline constexpr absl::string_view kTooLongFramePayload = "type.gyre/codec.TooLongFrame";
inline constexpr absl::string_view kCorruptedFramePayload = "type.gyre/codec.CorruptedFrame";

// Returns a ResourceExhausted status "TooLongFrame: <detail>" carrying the
// kTooLongFramePayload payload.
absl::Status TooLongFrameError(absl::string_view detail);
// Returns an InvalidArgument status "CorruptedFrame: <detail>" carrying the
// kCorruptedFramePayload payload.
absl::Status CorruptedFrameError(absl::string_view detail);

// True if `status` was made by TooLongFrameError / CorruptedFrameError (or carries the
// same payload).
bool IsTooLongFrame(const absl::Status& status);
bool IsCorruptedFrame(const absl::Status& status);

}  // namespace gyre

#endif  // GYRE_CODEC_CODEC_STATUS_H_
