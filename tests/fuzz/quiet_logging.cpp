// libFuzzer's start-up hook, linked into every fuzz target: the parsers log a
// warning for each malformed input, thousands a second, and writing them
// would take most of the run; only a crash matters.

#include "messages/log.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  lifeboat::set_log_level(lifeboat::log_level::error);
  return 0;
}
