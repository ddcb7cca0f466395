#include "platform/clock.hpp"

namespace lifeboat {

int64_t unix_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t unix_now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::chrono::milliseconds until(int64_t deadline_unix_ms) {
  return std::chrono::milliseconds{deadline_unix_ms - unix_now_ms()};
}

}  // namespace lifeboat
