// The command line of the Asio peer programs: a usage error, and whole-number flags.
//
//   constexpr Cli kCli{"asio_inproc", "[--divisor=N] [--workloads=W1,...,W6]"};
//   if (a.rfind("--divisor=", 0) == 0) divisor = kCli.Int(a, 10, 1, INT64_MAX);
//   else kCli.Usage("unknown argument " + a);
//
// Thread safety: stateless; Usage exits the process.
#ifndef GYRE_TOOLS_BENCH_PEERS_ASIO_CLI_H_
#define GYRE_TOOLS_BENCH_PEERS_ASIO_CLI_H_

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

struct Cli {
  const char* program;  // as it prints itself
  const char* options;  // the synopsis after the program's name

  // Prints "<program>: <why>" and the synopsis to stderr, and exits with status 2.
  [[noreturn]] void Usage(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program, why.c_str(), program, options);
    std::exit(2);
  }

  // The whole number after the first `prefix` characters of `arg` ("--port=8007"), when
  // it lies in [lo, hi]; Usage otherwise.
  long long Int(const std::string& arg, size_t prefix, long long lo, long long hi) const {
    char* end = nullptr;
    const long long v = std::strtoll(arg.c_str() + prefix, &end, 10);
    if (end == arg.c_str() + prefix || *end != '\0' || v < lo || v > hi) {
      Usage("bad value in " + arg + " (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    }
    return v;
  }
};

#endif  // GYRE_TOOLS_BENCH_PEERS_ASIO_CLI_H_
