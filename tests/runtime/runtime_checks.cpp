#include "tests/runtime/runtime_checks.hpp"

#include <sstream>

namespace lifeboat::test {

namespace {

std::string show(const std::vector<int64_t>& xs) {
  std::ostringstream out;
  out << "[";
  // Long runs of steps are summarised; the ends and the length tell enough.
  if (xs.size() > 12) {
    out << xs.front() << ", " << xs[1] << ", ... (" << xs.size() << " values) ..., " << xs.back();
  } else {
    for (size_t i = 0; i < xs.size(); ++i) out << (i ? ", " : "") << xs[i];
  }
  return out.str() + "]";
}

}  // namespace

testing::AssertionResult contiguous(const std::vector<int64_t>& values, int64_t from, int64_t to) {
  auto expected = to >= from ? static_cast<size_t>(to - from + 1) : 0;
  bool ok = values.size() == expected;
  for (size_t i = 0; ok && i < values.size(); ++i) ok = values[i] == from + static_cast<int64_t>(i);
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "expected " << from << ".." << to << ", got " << show(values);
}

testing::AssertionResult single_agreed_save(const worker_cluster& c, int64_t& step,
                                            const std::string& key) {
  auto first = c.values(0, key);
  if (first.size() != 1)
    return testing::AssertionFailure()
           << "rank 0 saved " << show(first) << ", expected exactly once\n"
           << c.transcript();
  step = first.front();
  return saves_at(c, {step}, key);
}

testing::AssertionResult saves_at(const worker_cluster& c, const std::vector<int64_t>& steps,
                                  const std::string& key) {
  for (int r = 0; r < c.size(); ++r) {
    auto saved = c.values(r, key);
    if (saved != steps)
      return testing::AssertionFailure() << "rank " << r << " saved (" << key << ") at "
                                         << show(saved) << ", expected " << show(steps) << "\n"
                                         << c.transcript();
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult ran_steps(const worker_cluster& c, int64_t restored, int64_t last) {
  for (int r = 0; r < c.size(); ++r) {
    if (auto ok = contiguous(c.values(r, "step"), restored + 1, last); !ok)
      return testing::AssertionFailure() << "rank " << r << " steps: " << ok.message() << "\n"
                                         << c.transcript();
    if (auto gaps = c.lines_containing(r, "gap expected="); !gaps.empty())
      return testing::AssertionFailure() << "rank " << r << ": " << gaps.front() << "\n"
                                         << c.transcript();
  }
  return testing::AssertionSuccess();
}

testing::AssertionResult all_exited(const std::vector<int>& codes, int code, size_t workers) {
  if (codes.size() == workers &&
      std::all_of(codes.begin(), codes.end(), [&](int c) { return c == code; }))
    return testing::AssertionSuccess();
  std::vector<int64_t> got(codes.begin(), codes.end());
  return testing::AssertionFailure()
         << "exit codes " << show(got) << ", expected " << workers << " times " << code;
}

testing::AssertionResult resumes_and_finishes(const cluster_options& opts, int64_t restored,
                                              int64_t target) {
  worker_cluster c{opts};
  auto codes = c.finish();
  if (auto ok = all_exited(codes, 0, static_cast<size_t>(c.size())); !ok)
    return testing::AssertionFailure() << "restart: " << ok.message() << "\n" << c.transcript();
  for (int r = 0; r < c.size(); ++r) {
    if (c.values(r, "restored") != std::vector<int64_t>{restored})
      return testing::AssertionFailure()
             << "rank " << r << " did not restore step " << restored << "\n"
             << c.transcript();
    auto done = c.lines_containing(r, "done total=");
    auto expected = "done total=" + std::to_string(target) + " applied=" + std::to_string(target);
    if (done != std::vector<std::string>{expected})
      return testing::AssertionFailure()
             << "rank " << r << " did not end with '" << expected << "'\n"
             << c.transcript();
  }
  return ran_steps(c, restored, target);
}

}  // namespace lifeboat::test
