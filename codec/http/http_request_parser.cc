#include "gyre/codec/http/http_request_parser.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gyre/codec/http/internal/http_chars.h"

namespace gyre {
namespace {

using http_internal::kFieldByte;
using http_internal::kTargetByte;
using http_internal::kToken;

bool IsFieldByte(unsigned char c) { return kFieldByte[c]; }

// Case-insensitive equality of a field name with a lower-case literal of the same
// length made of letters and '-' (for which OR-ing 0x20 folds case exactly).
bool NameIs(absl::string_view name, absl::string_view lower) {
  for (size_t i = 0; i < lower.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) | 0x20) != static_cast<unsigned char>(lower[i])) {
      return false;
    }
  }
  return true;
}
bool IsOws(char c) { return c == ' ' || c == '\t'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Calls f(element) for each non-empty element of a comma-separated list, trimmed.
template <typename F>
void ForEachListElement(absl::string_view v, F f) {
  while (!v.empty()) {
    size_t comma = v.find(',');
    absl::string_view e = v.substr(0, comma);
    v.remove_prefix(comma == absl::string_view::npos ? v.size() : comma + 1);
    while (!e.empty() && IsOws(e.front())) e.remove_prefix(1);
    while (!e.empty() && IsOws(e.back())) e.remove_suffix(1);
    if (!e.empty()) f(e);
  }
}

}  // namespace

HttpRequestParser::Result HttpRequestParser::Fail(int status, absl::string_view detail,
                                                  absl::string_view in, size_t* consumed) {
  state_ = State::kFailed;
  error_status_ = status;
  error_detail_ = std::string(detail);
  *consumed = in.size();
  return kError;
}

void HttpRequestParser::StartNext() {
  state_ = State::kStart;
  scan_ = 0;
  line_start_ = 0;
  header_bytes_ = 0;
  seen_request_line_ = false;
  content_length_fields_ = 0;
  host_fields_ = 0;
  content_length_ = 0;
  te_seen_ = te_chunked_seen_ = te_chunked_last_ = te_chunked_twice_ = te_other_ = false;
  connection_close_ = connection_keep_alive_ = false;
  expect_continue_ = expect_other_ = false;
  remaining_ = 0;
  trailer_bytes_ = 0;
}

// The scans below need no bounds checks: every line they read is followed in the buffer
// by the CR that ends it, and no byte class they scan for includes CR.
int HttpRequestParser::ParseRequestLine(absl::string_view head, size_t begin, size_t end) {
  const unsigned char* const base = reinterpret_cast<const unsigned char*>(head.data());
  const unsigned char* const line = base + begin;
  const unsigned char* const line_end = base + end;  // *line_end == '\r'
  // One field of the line: bytes of class `allowed`, at least one, then a space.
  auto field_end = [this](const unsigned char* from, const bool* allowed,
                          const char* invalid) -> const unsigned char* {
    const unsigned char* p = from;
    while (allowed[*p]) ++p;
    if (p == from || *p != ' ') {
      error_detail_ = p == from || *p == '\r' ? "malformed request line" : invalid;
      return nullptr;
    }
    return p;
  };
  const unsigned char* const method_end = field_end(line, kToken.data(), "invalid character in method");
  if (method_end == nullptr) return 400;
  const unsigned char* const target = method_end + 1;
  const unsigned char* const target_end =
      field_end(target, kTargetByte.data(), "invalid character in request target");
  if (target_end == nullptr) return 400;
  const absl::string_view version(reinterpret_cast<const char*>(target_end + 1),
                                  static_cast<size_t>(line_end - (target_end + 1)));
  if (version == "HTTP/1.1") {
    request_.version_ = HttpVersion::kHttp11;
  } else {
    if (version.size() != 8 || !absl::StartsWith(version, "HTTP/") ||
        !absl::ascii_isdigit(static_cast<unsigned char>(version[5])) || version[6] != '.' ||
        !absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
      error_detail_ = "malformed HTTP version";
      return 400;
    }
    if (version[5] != '1') {
      error_detail_ = absl::StrCat("HTTP version ", version, " is not supported");
      return 505;
    }
    request_.version_ = version[7] == '0' ? HttpVersion::kHttp10 : HttpVersion::kHttp11;
  }
  request_.method_ = {static_cast<uint32_t>(begin), static_cast<uint32_t>(method_end - line)};
  request_.target_ = {static_cast<uint32_t>(target - base),
                      static_cast<uint32_t>(target_end - target)};
  return 0;
}

int HttpRequestParser::CheckField(absl::string_view line, size_t* name_len, size_t* value_off,
                                  size_t* value_len) {
  const unsigned char* const begin = reinterpret_cast<const unsigned char*>(line.data());
  const unsigned char* const end = begin + line.size();  // *end == '\r'
  const unsigned char* p = begin;
  while (kToken[*p]) ++p;
  if (p == begin || *p != ':') {
    if (IsOws(static_cast<char>(*begin))) {
      error_detail_ = "obsolete line folding or whitespace before a field name";
    } else if (p == begin && *p == ':') {
      error_detail_ = "empty header field name";
    } else if (IsOws(static_cast<char>(*p))) {
      error_detail_ = "whitespace between field name and colon";
    } else {
      error_detail_ = "malformed header field";
    }
    return 400;
  }
  *name_len = static_cast<size_t>(p - begin);
  const unsigned char* v = p + 1;
  while (*v == ' ' || *v == '\t') ++v;
  const unsigned char* q = v;
  while (kFieldByte[*q]) ++q;
  if (q != end) {
    error_detail_ = "invalid character in header field value";
    return 400;
  }
  const unsigned char* e = end;
  while (e != v && (e[-1] == ' ' || e[-1] == '\t')) --e;
  *value_off = static_cast<size_t>(v - begin);
  *value_len = static_cast<size_t>(e - v);
  return 0;
}

int HttpRequestParser::ParseHeaderLine(absl::string_view head, size_t begin, size_t end) {
  const absl::string_view line(head.data() + begin, end - begin);
  size_t name_len = 0, value_off = 0, value_len = 0;
  if (int status = CheckField(line, &name_len, &value_off, &value_len); status != 0) {
    return status;
  }
  if (request_.headers_.size() >= limits_.max_headers) {
    error_detail_ = absl::StrCat("more than ", limits_.max_headers, " header fields");
    return 431;
  }
  request_.headers_.push_back(
      {{static_cast<uint32_t>(begin), static_cast<uint32_t>(name_len)},
       {static_cast<uint32_t>(begin + value_off), static_cast<uint32_t>(value_len)}});
  const absl::string_view name = line.substr(0, name_len);
  const absl::string_view value = line.substr(value_off, value_len);
  switch (name_len) {
    case 4:
      if (NameIs(name, "host")) ++host_fields_;
      break;
    case 6:
      if (NameIs(name, "expect")) {
        if (absl::EqualsIgnoreCase(value, "100-continue")) {
          expect_continue_ = true;
        } else {
          expect_other_ = true;
        }
      }
      break;
    case 10:
      if (NameIs(name, "connection")) {
        ForEachListElement(value, [this](absl::string_view t) {
          if (absl::EqualsIgnoreCase(t, "close")) connection_close_ = true;
          if (absl::EqualsIgnoreCase(t, "keep-alive")) connection_keep_alive_ = true;
        });
      }
      break;
    case 14:
      if (NameIs(name, "content-length")) {
        if (++content_length_fields_ > 1) {
          error_detail_ = "more than one Content-Length field";
          return 400;
        }
        if (value.empty()) {
          error_detail_ = "empty Content-Length";
          return 400;
        }
        uint64_t n = 0;
        for (char c : value) {
          if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
            error_detail_ = "Content-Length is not a decimal number";
            return 400;
          }
          // Saturate: anything this large is above every body limit anyway.
          n = n > (uint64_t{1} << 60) ? n : n * 10 + static_cast<uint64_t>(c - '0');
        }
        content_length_ = n;
      }
      break;
    case 17:
      if (NameIs(name, "transfer-encoding")) {
        te_seen_ = true;
        ForEachListElement(value, [this](absl::string_view coding) {
          const absl::string_view token = coding.substr(0, coding.find(';'));
          if (absl::EqualsIgnoreCase(absl::StripTrailingAsciiWhitespace(token), "chunked")) {
            if (te_chunked_seen_) te_chunked_twice_ = true;
            te_chunked_seen_ = te_chunked_last_ = true;
          } else {
            te_other_ = true;
            te_chunked_last_ = false;
          }
        });
      }
      break;
    default:
      break;
  }
  return 0;
}

int HttpRequestParser::FinishHead() {
  const bool http11 = request_.version_ == HttpVersion::kHttp11;
  if (http11 && host_fields_ != 1) {
    error_detail_ = host_fields_ == 0 ? "HTTP/1.1 request without Host" : "more than one Host";
    return 400;
  }
  if (te_seen_) {
    if (!http11) {
      error_detail_ = "Transfer-Encoding in an HTTP/1.0 request";
      return 400;
    }
    if (content_length_fields_ > 0) {
      error_detail_ = "both Transfer-Encoding and Content-Length";
      return 400;
    }
    if (te_chunked_twice_ || !te_chunked_last_) {
      error_detail_ = "chunked is not the final transfer coding exactly once";
      return 400;
    }
    if (te_other_) {
      error_detail_ = "transfer coding other than chunked";
      return 501;
    }
  }
  if (expect_other_) {
    error_detail_ = "unsupported expectation";
    return 417;
  }
  if (content_length_ > limits_.max_body) {
    error_detail_ = absl::StrCat("Content-Length ", content_length_, " exceeds ",
                                 limits_.max_body);
    return 413;
  }
  request_.keep_alive_ = http11 ? !connection_close_ : connection_keep_alive_ && !connection_close_;
  request_.chunked_ = te_seen_;
  return 0;
}

HttpRequestParser::Result HttpRequestParser::Parse(absl::string_view in, size_t* consumed) {
  size_t pos = 0;
  *consumed = 0;
  for (;;) {
    switch (state_) {
      case State::kFailed:
        *consumed = in.size();
        return kError;

      case State::kStart: {
        // RFC 9112 2.2: empty lines before a request line are ignored.
        while (pos < in.size() && in[pos] == '\r') {
          if (pos + 1 == in.size()) {
            *consumed = pos;
            return kNeedMore;
          }
          if (in[pos + 1] != '\n') return Fail(400, "bare CR", in, consumed);
          pos += 2;
        }
        if (pos == in.size()) {
          *consumed = pos;
          return kNeedMore;
        }
        if (in[pos] == '\n') return Fail(400, "bare LF", in, consumed);
        request_ = HttpRequest();
        state_ = State::kHead;
        break;
      }

      case State::kHead: {
        const absl::string_view head = in.substr(pos);
        for (;;) {
          const void* nl = scan_ < head.size()
                               ? std::memchr(head.data() + scan_, '\n', head.size() - scan_)
                               : nullptr;
          const size_t eol = nl == nullptr ? head.size() : static_cast<const char*>(nl) - head.data();
          // The limits apply to the line's bytes without a CR that may end it, whether
          // or not its LF has arrived, so a split input fails as the whole one does.
          size_t content = eol - line_start_;
          if (content > 0 && head[eol - 1] == '\r') --content;
          if (!seen_request_line_) {
            if (content > limits_.max_request_line) {
              return Fail(414, "request line too long", in, consumed);
            }
          } else if (content > 0 && header_bytes_ + content + 2 > limits_.max_header_bytes) {
            return Fail(431, "header fields too large", in, consumed);
          }
          if (nl == nullptr) {
            scan_ = head.size();
            *consumed = pos;
            return kNeedMore;
          }
          if (eol == line_start_ || head[eol - 1] != '\r') {
            return Fail(400, "line not terminated by CRLF", in, consumed);
          }
          const size_t line_end = eol - 1;
          scan_ = eol + 1;
          int status = 0;
          if (!seen_request_line_) {
            status = ParseRequestLine(head, line_start_, line_end);
            seen_request_line_ = true;
          } else if (line_end == line_start_) {
            // The empty line: the head is complete.
            const size_t head_len = scan_;
            if (head_len > UINT32_MAX) return Fail(431, "head too large", in, consumed);
            request_.head_.assign(head.data(), head_len);
            status = FinishHead();
            if (status != 0) return Fail(status, error_detail_, in, consumed);
            pos += head_len;
            scan_ = line_start_ = 0;
            const bool has_body = request_.chunked_ || content_length_ > 0;
            if (request_.chunked_) {
              state_ = State::kChunkSize;
            } else if (content_length_ > 0) {
              remaining_ = content_length_;
              request_.body_.reserve(static_cast<size_t>(content_length_));
              state_ = State::kBody;
            }
            if (has_body && expect_continue_) {
              *consumed = pos;
              return kExpectContinue;
            }
            if (!has_body) {
              *consumed = pos;
              StartNext();
              return kRequest;
            }
            break;
          } else {
            header_bytes_ += scan_ - line_start_;
            status = ParseHeaderLine(head, line_start_, line_end);
          }
          if (status != 0) return Fail(status, error_detail_, in, consumed);
          line_start_ = scan_;
        }
        break;
      }

      case State::kBody:
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(remaining_, in.size() - pos));
        request_.body_.append(in.data() + pos, n);
        pos += n;
        remaining_ -= n;
        if (remaining_ > 0) {
          *consumed = pos;
          return kNeedMore;
        }
        if (state_ == State::kBody) {
          *consumed = pos;
          StartNext();
          return kRequest;
        }
        state_ = State::kChunkCrlf;
        break;
      }

      case State::kChunkCrlf: {
        const size_t avail = in.size() - pos;
        if (avail == 0 || (avail == 1 && in[pos] == '\r')) {
          *consumed = pos;
          return kNeedMore;
        }
        if (in[pos] != '\r' || in[pos + 1] != '\n') {
          return Fail(400, "chunk data not followed by CRLF", in, consumed);
        }
        pos += 2;
        state_ = State::kChunkSize;
        break;
      }

      case State::kChunkSize: {
        const absl::string_view rest = in.substr(pos);
        const size_t nl = rest.find('\n');
        if (nl == absl::string_view::npos) {
          if (rest.size() > limits_.max_chunk_line + 1) {
            return Fail(400, "chunk size line too long", in, consumed);
          }
          *consumed = pos;
          return kNeedMore;
        }
        if (nl == 0 || rest[nl - 1] != '\r') {
          return Fail(400, "chunk size line not terminated by CRLF", in, consumed);
        }
        const absl::string_view line = rest.substr(0, nl - 1);
        if (line.size() > limits_.max_chunk_line) {
          return Fail(400, "chunk size line too long", in, consumed);
        }
        uint64_t size = 0;
        size_t i = 0;
        for (; i < line.size(); ++i) {
          const int h = HexValue(line[i]);
          if (h < 0) break;
          if (i == 16) return Fail(400, "chunk size too large", in, consumed);
          size = size * 16 + static_cast<uint64_t>(h);
        }
        if (i == 0) return Fail(400, "malformed chunk size", in, consumed);
        // chunk-ext: BWS ";" ... ; only its characters are checked.
        size_t k = i;
        while (k < line.size() && IsOws(line[k])) ++k;
        if (k < line.size() && line[k] != ';') {
          return Fail(400, "malformed chunk size", in, consumed);
        }
        for (; k < line.size(); ++k) {
          if (!IsFieldByte(static_cast<unsigned char>(line[k]))) {
            return Fail(400, "invalid character in chunk extension", in, consumed);
          }
        }
        if (size > limits_.max_body - request_.body_.size()) {
          return Fail(413, absl::StrCat("chunked body exceeds ", limits_.max_body), in, consumed);
        }
        pos += nl + 1;
        if (size == 0) {
          state_ = State::kTrailer;
          trailer_bytes_ = 0;
        } else {
          remaining_ = size;
          state_ = State::kChunkData;
        }
        break;
      }

      case State::kTrailer: {
        const absl::string_view rest = in.substr(pos);
        const size_t nl = rest.find('\n');
        const size_t eol = nl == absl::string_view::npos ? rest.size() : nl;
        size_t content = eol;
        if (content > 0 && rest[eol - 1] == '\r') --content;
        if (content > 0 && trailer_bytes_ + content + 2 > limits_.max_header_bytes) {
          return Fail(431, "trailer fields too large", in, consumed);
        }
        if (nl == absl::string_view::npos) {
          *consumed = pos;
          return kNeedMore;
        }
        if (nl == 0 || rest[nl - 1] != '\r') {
          return Fail(400, "trailer line not terminated by CRLF", in, consumed);
        }
        pos += nl + 1;
        if (nl == 1) {
          *consumed = pos;
          StartNext();
          return kRequest;
        }
        trailer_bytes_ += nl + 1;
        size_t name_len = 0, value_off = 0, value_len = 0;
        if (int status = CheckField(rest.substr(0, nl - 1), &name_len, &value_off, &value_len);
            status != 0) {
          return Fail(status, error_detail_, in, consumed);
        }
        break;
      }
    }
  }
}

}  // namespace gyre
