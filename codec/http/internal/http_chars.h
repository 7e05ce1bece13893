// Byte classes of HTTP/1.1 (RFC 9110 / 9112) as 256-entry tables, shared by the request
// parser and the message types. Internal to //codec/http.
//
// Thread safety: constant data.
#ifndef GYRE_CODEC_HTTP_INTERNAL_HTTP_CHARS_H_
#define GYRE_CODEC_HTTP_INTERNAL_HTTP_CHARS_H_

#include <array>
#include <string_view>

namespace gyre {
namespace http_internal {

// RFC 9110 5.6.2 tchar: the bytes of a token (method, field name).
constexpr std::array<bool, 256> MakeTokenTable() {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}
inline constexpr std::array<bool, 256> kToken = MakeTokenTable();

// A field-value byte: HTAB, SP, VCHAR, obs-text (RFC 9110 5.5). Not CR, LF or NUL.
constexpr std::array<bool, 256> MakeFieldByteTable() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 256; ++c) t[c] = c != 0x7f;
  t['\t'] = true;
  return t;
}
inline constexpr std::array<bool, 256> kFieldByte = MakeFieldByteTable();

// A request-target byte: VCHAR (RFC 9112 3.2; the forms' finer grammar is the
// application's).
constexpr std::array<bool, 256> MakeTargetByteTable() {
  std::array<bool, 256> t{};
  for (int c = 0x21; c < 0x7f; ++c) t[c] = true;
  return t;
}
inline constexpr std::array<bool, 256> kTargetByte = MakeTargetByteTable();

}  // namespace http_internal
}  // namespace gyre

#endif  // GYRE_CODEC_HTTP_INTERNAL_HTTP_CHARS_H_
