#include "gyre/codec/http/http_message.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gyre/codec/http/internal/http_chars.h"

namespace gyre {

std::optional<absl::string_view> HttpRequest::Header(absl::string_view name) const {
  for (const Field& f : headers_) {
    if (absl::EqualsIgnoreCase(View(f.name), name)) return View(f.value);
  }
  return std::nullopt;
}

absl::string_view HttpReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}


void HttpResponse::AddHeader(absl::string_view name, absl::string_view value) {
  bool valid = !name.empty();
  for (char c : name) valid &= http_internal::kToken[static_cast<unsigned char>(c)];
  for (char c : value) valid &= http_internal::kFieldByte[static_cast<unsigned char>(c)];
  if (!valid) headers_valid_ = false;
  switch (name.size()) {
    case 10:
      if (absl::EqualsIgnoreCase(name, "connection")) {
        has_connection_ = true;
        for (absl::string_view t : absl::StrSplit(value, ',')) {
          if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(t), "close")) {
            connection_close_ = true;
          }
        }
      }
      break;
    case 14:
      if (absl::EqualsIgnoreCase(name, "content-length")) has_content_length_ = true;
      break;
    default:
      break;
  }
  if (headers_.empty()) headers_.reserve(160);
  headers_.append(name.data(), name.size());
  headers_.append(": ", 2);
  headers_.append(value.data(), value.size());
  headers_.append("\r\n", 2);
}

std::optional<absl::string_view> HttpResponse::Header(absl::string_view name) const {
  absl::string_view rest = headers_;
  while (!rest.empty()) {
    const size_t eol = rest.find("\r\n");
    absl::string_view line = rest.substr(0, eol);
    rest.remove_prefix(eol == absl::string_view::npos ? rest.size() : eol + 2);
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::EqualsIgnoreCase(line.substr(0, colon), name)) {
      return absl::StripLeadingAsciiWhitespace(line.substr(colon + 1));
    }
  }
  return std::nullopt;
}

}  // namespace gyre
