#pragma once

// handler_bench's hot path: step_completed() while no notice is active beside
// an empty, not inlined call, as Google Benchmark runs (medians of
// repetitions). Runs on the calling thread.

#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace lifeboat::bench::handler_bench {

// Keeps the console output and remembers each benchmark's median.
class median_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs)
      if (run.aggregate_name == "median")
        medians_[run.run_name.function_name] = run.GetAdjustedRealTime();
    ConsoleReporter::ReportRuns(runs);
  }
  double median(const std::string& name) const { return medians_.at(name); }

 private:
  std::map<std::string, double> medians_;
};

// Runs the registered benchmarks with a handler of its own (gone, with its
// checkpoint directory, when this returns), reporting to `reporter`.
void run_hot_path(median_reporter& reporter);

}  // namespace lifeboat::bench::handler_bench
