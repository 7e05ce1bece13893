#include "gyre/benchmarks/http/http_request_head.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace gyre::bench {
namespace {

// RFC 9110 tchar: the characters of a token (method, header name, Connection option).
constexpr bool IsTokenChar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Visible ASCII (a request target has no spaces or controls).
bool IsVisible(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

// A field value: visible characters, spaces, tabs and obs-text; no other controls.
bool IsFieldValue(absl::string_view s) {
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

absl::string_view TrimOws(absl::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseLength(absl::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 13) return false;  // 13 digits already exceed kMaxContentLength
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > kMaxContentLength) return false;
  *out = v;
  return true;
}

// Applies the options of one Connection header ("close", "keep-alive", comma lists).
void ApplyConnection(absl::string_view value, bool* saw_close, bool* saw_keep_alive) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    absl::string_view option = TrimOws(value.substr(0, comma));
    if (absl::EqualsIgnoreCase(option, "close")) *saw_close = true;
    if (absl::EqualsIgnoreCase(option, "keep-alive")) *saw_keep_alive = true;
    if (comma == absl::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

size_t FindHeadEnd(absl::string_view data, size_t scanned) {
  // The terminator may straddle the part already searched: back up three bytes.
  const size_t from = scanned > 3 ? scanned - 3 : 0;
  if (data.size() < from + 4) return absl::string_view::npos;
  const void* hit = memmem(data.data() + from, data.size() - from, "\r\n\r\n", 4);
  if (hit == nullptr) return absl::string_view::npos;
  return static_cast<size_t>(static_cast<const char*>(hit) - data.data()) + 4;
}

HeadParse ParseRequestHead(absl::string_view head, HttpRequestHead* out) {
  if (!absl::EndsWith(head, "\r\n\r\n")) return HeadParse::kBadRequest;
  head.remove_suffix(2);  // every line, the last included, now ends in "\r\n"

  // Request line: METHOD SP request-target SP HTTP-version.
  size_t eol = head.find("\r\n");
  absl::string_view line = head.substr(0, eol);
  head.remove_prefix(eol + 2);
  const size_t sp1 = line.find(' ');
  if (sp1 == absl::string_view::npos) return HeadParse::kBadRequest;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == absl::string_view::npos) return HeadParse::kBadRequest;
  const absl::string_view method = line.substr(0, sp1);
  const absl::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const absl::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || !IsVisible(target)) return HeadParse::kBadRequest;
  if (version == "HTTP/1.1") {
    out->http10 = false;
  } else if (version == "HTTP/1.0") {
    out->http10 = true;
  } else {
    return HeadParse::kBadRequest;
  }
  out->method_name = method;
  out->method = method == "GET"    ? HttpMethod::kGet
                : method == "HEAD" ? HttpMethod::kHead
                                   : HttpMethod::kOther;
  out->path = target.substr(0, target.find('?'));

  bool saw_close = false;
  bool saw_keep_alive = false;
  bool have_length = false;
  uint64_t length = 0;
  while (!head.empty()) {
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    const size_t colon = line.find(':');
    // No colon, an empty name, or whitespace before the colon (which also rejects
    // obsolete line folding: a continuation line starts with a space).
    if (colon == absl::string_view::npos) return HeadParse::kBadRequest;
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value = TrimOws(line.substr(colon + 1));
    if (!IsToken(name) || !IsFieldValue(value)) return HeadParse::kBadRequest;
    if (absl::EqualsIgnoreCase(name, "content-length")) {
      uint64_t v = 0;
      if (!ParseLength(value, &v)) return HeadParse::kBadRequest;
      if (have_length && v != length) return HeadParse::kBadRequest;
      have_length = true;
      length = v;
    } else if (absl::EqualsIgnoreCase(name, "connection")) {
      ApplyConnection(value, &saw_close, &saw_keep_alive);
    } else if (absl::EqualsIgnoreCase(name, "transfer-encoding")) {
      return HeadParse::kNotImplemented;
    }
  }
  out->content_length = length;
  out->keep_alive = out->http10 ? (saw_keep_alive && !saw_close) : !saw_close;
  return HeadParse::kOk;
}

}  // namespace gyre::bench
