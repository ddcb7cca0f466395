#pragma once

// The build tree a test binary belongs to, and the programs in it.
//
// Tests name the programs they start (lifeboat-launch, the test workers) by
// their paths inside the build tree, which CMake passes as compile
// definitions (LIFEBOAT_LAUNCH="apps/lifeboat-launch"; lifeboat_test_programs
// in tests/CMakeLists.txt). Why not absolute paths: they would put the
// clone's location into every object that names a program, and ccache could
// never reuse one compiled in another clone.
//
// Thread-safe: the tree is found once, on first use.

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lifeboat::test {

/// The nearest directory above the running executable that holds
/// CMakeCache.txt. Throws std::runtime_error where there is none (a test
/// binary copied out of its tree).
inline const std::filesystem::path& build_tree() {
  static const std::filesystem::path root = [] {
    auto exe = std::filesystem::read_symlink("/proc/self/exe");
    for (auto dir = exe.parent_path(); dir != dir.parent_path(); dir = dir.parent_path())
      if (std::filesystem::exists(dir / "CMakeCache.txt")) return dir;
    throw std::runtime_error(exe.string() + " is in no build tree: no CMakeCache.txt above it");
  }();
  return root;
}

/// The absolute path of `relative`, a path inside the build tree.
inline std::string built(std::string_view relative) { return (build_tree() / relative).string(); }

}  // namespace lifeboat::test
