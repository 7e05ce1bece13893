#include "gyre/concurrent/thread_factory.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <string>

namespace gyre {
namespace internal {

bool SetCurrentThreadName(std::string_view name) {
  std::string truncated(name.substr(0, 15));
  return pthread_setname_np(pthread_self(), truncated.c_str()) == 0;
}

std::string CurrentThreadName() {
  char buf[32] = {0};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) != 0) return "";
  return buf;
}

int CurrentOsThreadId() { return static_cast<int>(syscall(SYS_gettid)); }

}  // namespace internal

std::string ToPoolName(std::string_view class_name) {
  size_t colon = class_name.rfind("::");
  if (colon != std::string_view::npos) class_name = class_name.substr(colon + 2);
  if (class_name.empty()) return "unknown";
  std::string name(class_name);
  if (name.size() == 1) {
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
    return name;
  }
  if (std::isupper(static_cast<unsigned char>(name[0])) &&
      std::islower(static_cast<unsigned char>(name[1]))) {
    name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  }
  return name;
}

}  // namespace gyre
