// handler_bench's phases: more N = 16 rounds with the workers logging at
// debug level, and when each protocol step ended after the signal.

#include "bench/handler/phases.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "bench/handler/agreement.hpp"
#include "bench/handler/settings.hpp"

namespace lifeboat::bench::handler_bench {

namespace {

// Where one agreement's time goes. The workers log at debug level,
// where each step resolver writes every protocol step it takes with the wall
// clock, which the processes of one host share. Each milestone is the median
// over the rounds, in ms after the signal was sent. The debug lines cost the
// workers a write each, so the figure itself comes from the plain run.
constexpr int phases_rounds = 30;

// The first and the last time one of ranks [from, to) took `what` (as the
// resolver's debug line names it), in ms after the signal.
std::pair<double, double> taken(const round_result& r, size_t from, size_t to,
                                const std::string& what) {
  const std::string marker = "took " + what + " at unix_us ";
  std::vector<double> times;
  for (size_t rank = from; rank < to; ++rank)
    for (auto& line : r.lines[rank])
      if (auto at = line.find(marker); at != std::string::npos)
        times.push_back((std::stoll(line.substr(at + marker.size())) - r.signal_unix_us) / 1000.0);
  if (times.empty()) die("phases: no worker logged that it took " + what);
  auto [first, last] = std::minmax_element(times.begin(), times.end());
  return {*first, *last};
}

// Each milestone of every round, in ms after the signal.
struct phase_samples {
  std::vector<double> own_notice, leader_notice, first_query, last_query, first_report, last_report,
      first_commit, last_commit, agreed;
};

}  // namespace

void print_phases(const std::string& self) {
  const int n = agreement_target_n;
  phase_samples at;
  for (int round = 0; round < phases_rounds; ++round) {
    auto r = agreement_round(self, n, round, "debug");
    at.own_notice.push_back(taken(r, n - 1, n, "a notice of its own").first);
    at.leader_notice.push_back(taken(r, 0, 1, "a notice").first);
    auto [first_query, last_query] = taken(r, 1, n, "a query");
    at.first_query.push_back(first_query);
    at.last_query.push_back(last_query);
    auto [first_report, last_report] = taken(r, 0, 1, "a report");
    at.first_report.push_back(first_report);
    at.last_report.push_back(last_report);
    auto [first_commit, last_commit] = taken(r, 1, n, "a commit");
    at.first_commit.push_back(first_commit);
    at.last_commit.push_back(last_commit);
    at.agreed.push_back(r.ms);
  }
  auto p50 = [](const std::vector<double>& xs) { return percentile(xs, 0.5); };
  std::printf(
      "\nnotice to agreement N=%d, phase by phase (medians of %d rounds, ms after the signal; "
      "the workers log at debug level)\n",
      n, phases_rounds);
  std::printf("  the signalled worker's resolver took the notice %.2f, the leader's %.2f\n",
              p50(at.own_notice), p50(at.leader_notice));
  std::printf("  the query reached the followers' resolvers: the first %.2f, the last %.2f\n",
              p50(at.first_query), p50(at.last_query));
  std::printf("  the leader took the reports: the first %.2f, the last %.2f\n",
              p50(at.first_report), p50(at.last_report));
  std::printf(
      "  the commit reached the followers' resolvers: the first %.2f, the last %.2f; the last "
      "agreement was read %.2f\n",
      p50(at.first_commit), p50(at.last_commit), p50(at.agreed));
}

}  // namespace lifeboat::bench::handler_bench
