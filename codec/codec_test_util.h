// Test helpers for //codec and //codec/http: buffers from strings, reading frames back
// as strings, and the ways of splitting an input that every decoder test walks through.
#ifndef GYRE_CODEC_CODEC_TEST_UTIL_H_
#define GYRE_CODEC_CODEC_TEST_UTIL_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gyre/channel/byte_buf.h"
#include "gyre/channel/byte_buf_allocator.h"
#include "gyre/testing/embedded_channel.h"

namespace gyre {
namespace codec_test {

inline ByteBuf Buf(absl::string_view s) {
  return *UnpooledByteBufAllocator::Default()->CopiedBuffer(s);
}

// Every way the tests feed `input`: whole; in two pieces split at each byte boundary;
// one byte at a time.
inline std::vector<std::vector<std::string>> Splits(absl::string_view input) {
  std::vector<std::vector<std::string>> out;
  out.push_back({std::string(input)});
  for (size_t i = 1; i < input.size(); ++i) {
    out.push_back({std::string(input.substr(0, i)), std::string(input.substr(i))});
  }
  std::vector<std::string> bytes;
  for (char c : input) bytes.push_back(std::string(1, c));
  if (input.size() > 1) out.push_back(bytes);
  return out;
}

// Describes a split for failure messages.
inline std::string Describe(const std::vector<std::string>& pieces) {
  std::string d = "pieces:";
  for (const std::string& p : pieces) d += " " + std::to_string(p.size());
  return d;
}

inline void Feed(testing::EmbeddedChannel& ch, const std::vector<std::string>& pieces) {
  for (const std::string& p : pieces) ch.WriteInbound(Buf(p));
}

// A channel (EmbeddedChannel::Create) whose pipeline holds `handlers`, fed `pieces`.
inline std::shared_ptr<testing::EmbeddedChannel> FedChannel(
    std::vector<std::shared_ptr<ChannelHandler>> handlers, const std::vector<std::string>& pieces) {
  std::shared_ptr<testing::EmbeddedChannel> ch =
      testing::EmbeddedChannel::Create(std::move(handlers));
  Feed(*ch, pieces);
  return ch;
}

// A message as a string: a ByteBuf's bytes, a std::string itself, anything else "<type>".
inline std::string AsString(Message& m) {
  if (ByteBuf* b = m.Get<ByteBuf>()) return b->ToString();
  if (std::string* s = m.Get<std::string>()) return *s;
  return std::string("<") + m.type_name() + ">";
}

// Every message `read()` yields until it yields none, as strings.
template <typename Read>
std::vector<std::string> DrainAsStrings(Read read) {
  std::vector<std::string> out;
  while (std::optional<Message> m = read()) out.push_back(AsString(*m));
  return out;
}

inline std::vector<std::string> InboundStrings(testing::EmbeddedChannel& ch) {
  return DrainAsStrings([&ch] { return ch.ReadInbound(); });
}

inline std::vector<std::string> OutboundStrings(testing::EmbeddedChannel& ch) {
  return DrainAsStrings([&ch] { return ch.ReadOutbound(); });
}

// Every exception that reached the tail, in order.
inline std::vector<absl::Status> Exceptions(testing::EmbeddedChannel& ch) {
  std::vector<absl::Status> out;
  for (absl::Status s = ch.CheckException(); !s.ok(); s = ch.CheckException()) out.push_back(s);
  return out;
}

// Matches an absl::Status with code `code` whose message contains `part`:
//   EXPECT_THAT(Exceptions(*ch), ElementsAre(StatusWith(absl::StatusCode::kInternal, "boom")));
MATCHER_P2(StatusWith, code, part, "") {
  *result_listener << "which is " << arg;
  return arg.code() == code && absl::StrContains(arg.message(), part);
}

}  // namespace codec_test
}  // namespace gyre

#endif  // GYRE_CODEC_CODEC_TEST_UTIL_H_
