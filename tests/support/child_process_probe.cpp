// child_process_probe COMMAND [ARGS...]: starts COMMAND through child_process,
// prints its pid on a line, then waits until its own stdin closes. The test
// kills this process and checks that COMMAND goes with it.
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/child_process.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: child_process_probe COMMAND [ARGS...]\n");
    return 2;
  }
  lifeboat::test::child_process child(std::vector<std::string>(argv + 1, argv + argc));
  if (!child.started()) return 1;
  std::printf("%d\n", static_cast<int>(child.pid()));
  std::fflush(stdout);
  // Blocks until the test closes the pipe or kills this process.
  for (int c = std::getchar(); c != EOF; c = std::getchar()) {
  }
  return 0;
}
