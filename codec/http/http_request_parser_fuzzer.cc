// A libFuzzer target for HttpRequestParser: the first byte picks the split size, the
// rest is a byte stream fed as a connection's cumulation would be (unconsumed bytes
// presented again with the next piece), each call over a heap block of exactly the
// bytes it may read. A crash, a sanitizer report, a consumed count beyond the input, a
// request whose views reach outside its head, or an error status outside the
// documented set is a finding. The whole stream is also parsed in one piece; both ways
// must agree on the requests and the error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gyre/codec/http/http_request_parser.h"
#include "gyre/concurrent/internal/log.h"

namespace {

struct Summary {
  std::vector<std::string> requests;  // method target body, one per request
  int error = 0;
};

Summary Feed(const uint8_t* data, size_t size, size_t piece) {
  gyre::HttpParserLimits limits;
  limits.max_request_line = 256;
  limits.max_header_bytes = 512;
  limits.max_headers = 16;
  limits.max_body = 4096;
  limits.max_chunk_line = 64;
  gyre::HttpRequestParser parser(limits);
  Summary out;
  std::string pending;
  for (size_t off = 0; off < size && out.error == 0; off += piece) {
    pending.append(reinterpret_cast<const char*>(data) + off, std::min(piece, size - off));
    for (;;) {
      std::unique_ptr<char[]> exact(new char[pending.size() + 1]);
      std::memcpy(exact.get(), pending.data(), pending.size());
      size_t used = 0;
      const auto r = parser.Parse(absl::string_view(exact.get(), pending.size()), &used);
      GYRE_CHECK(used <= pending.size());
      pending.erase(0, used);
      if (r == gyre::HttpRequestParser::kRequest) {
        gyre::HttpRequest req = parser.TakeRequest();
        GYRE_CHECK(!req.method().empty() && !req.target().empty());
        GYRE_CHECK(req.body().size() <= limits.max_body);
        for (size_t i = 0; i < req.header_count(); ++i) {
          GYRE_CHECK(!req.header_name(i).empty());
          (void)req.header_value(i);
        }
        out.requests.push_back(std::string(req.method()) + " " + std::string(req.target()) +
                               " " + req.body());
        continue;
      }
      if (r == gyre::HttpRequestParser::kExpectContinue) continue;
      if (r == gyre::HttpRequestParser::kError) {
        const int s = parser.error_status();
        GYRE_CHECK(s == 400 || s == 413 || s == 414 || s == 417 || s == 431 || s == 501 ||
                   s == 505)
            << s;
        out.error = s;
      }
      break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 16;
  const Summary split = Feed(data + 1, size - 1, piece);
  const Summary whole = Feed(data + 1, size - 1, size);
  GYRE_CHECK(split.requests == whole.requests) << "split " << piece;
  GYRE_CHECK(split.error == whole.error) << split.error << " vs " << whole.error;
  return 0;
}
