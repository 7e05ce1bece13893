// A downstream program: includes gyre's public headers by their documented paths.
#include <cstdio>
#include <string>

#include "gyre/concurrent/future.h"
#include "gyre/concurrent/promise.h"

int main() {
  gyre::Promise<int> answer;
  gyre::Future<std::string> text =
      answer.Then([](const int& v) { return "the answer is " + std::to_string(v); });
  answer.TrySuccess(42);
  absl::StatusOr<std::string> result = text.Sync();
  if (!result.ok()) {
    std::fprintf(stderr, "failed: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", result->c_str());
  return 0;
}
