// A main() for fuzz targets built without libFuzzer: runs LLVMFuzzerTestOneInput on each
// file named on the command line (directories are walked one level deep), so every
// target's seed corpus is replayed by `bazel test` with gcc and the sanitizer configs.
// With `--config=fuzz` the target links libFuzzer's main instead (see bazel/gyre.bzl).
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz_driver: cannot read %s\n", path.c_str());
    return false;
  }
  // A heap block of exactly the input's size (the vector's own), so that reading past
  // it is an ASan report.
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.empty() ? nullptr : bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int ran = 0, failed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;  // libFuzzer flags: ignored here
    struct stat st;
    if (stat(arg.c_str(), &st) != 0) {
      std::fprintf(stderr, "fuzz_driver: no such file or directory: %s\n", arg.c_str());
      ++failed;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR* dir = opendir(arg.c_str());
      if (dir == nullptr) {
        ++failed;
        continue;
      }
      std::vector<std::string> names;
      while (dirent* e = readdir(dir)) {
        if (e->d_name[0] != '.') names.push_back(arg + "/" + e->d_name);
      }
      closedir(dir);
      for (const std::string& n : names) (RunFile(n) ? ran : failed)++;
    } else {
      (RunFile(arg) ? ran : failed)++;
    }
  }
  std::printf("fuzz_driver: ran %d input(s)\n", ran);
  if (ran == 0) {
    std::fprintf(stderr, "fuzz_driver: no inputs given\n");
    return 2;
  }
  return failed == 0 ? 0 : 1;
}
