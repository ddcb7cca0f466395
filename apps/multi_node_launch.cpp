#include "apps/multi_node_launch.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <caf/send.hpp>

#include "actors/coordination/coordination_atoms.hpp"
#include "apps/launch_policy.hpp"
#include "messages/errors.hpp"
#include "platform/signal_pipe.hpp"
#include "platform/text_parse.hpp"

namespace lifeboat::apps {

namespace {

using time_point = link_clock::time_point;
// No worker of the generation exited yet: nothing bounds the others.
constexpr auto no_deadline = time_point::max();

// A descriptor readable while a SIGCHLD is pending (SIGCHLD is blocked in
// every thread of the launcher), so that one poll waits for workers and links.
class child_events {
 public:
  child_events() {
    auto set = signal_set({SIGCHLD});
    fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  }
  ~child_events() { ::close(fd_); }
  child_events(const child_events&) = delete;
  child_events& operator=(const child_events&) = delete;

  /// Waits until a child changed state, a link has data, or `until`.
  void wait(const std::vector<node_link*>& links, time_point until) {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    for (auto* link : links) fds.push_back({link->fd(), POLLIN, 0});
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - link_clock::now());
    // One more millisecond: poll rounds down, and waking before `until`
    // would only come back here.
    ::poll(fds.data(), fds.size(),
           static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, INT_MAX)));
    signalfd_siginfo info;
    while (::read(fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    }
  }

 private:
  int fd_ = -1;
};

std::string encode(const worker_exit& e) {
  return "exit " + std::to_string(e.rank) + " " + std::to_string(e.pid) + " " +
         std::to_string(e.code) + " " + std::to_string(e.signal) + " " +
         std::to_string(e.killed_at_deadline ? 1 : 0) + " " +
         std::to_string(e.killed_as_lost ? 1 : 0) + " " + std::to_string(e.killed_unheeded ? 1 : 0);
}

std::optional<worker_exit> decode_exit(const std::string& line) {
  worker_exit e;
  int pid = 0;
  int killed = 0;
  int lost = 0;
  int unheeded = 0;
  if (std::sscanf(line.c_str(), "exit %d %d %d %d %d %d %d", &e.rank, &pid, &e.code, &e.signal,
                  &killed, &lost, &unheeded) != 7)
    return std::nullopt;
  e.pid = static_cast<pid_t>(pid);
  e.killed_at_deadline = killed != 0;
  e.killed_as_lost = lost != 0;
  e.killed_unheeded = unheeded != 0;
  return e;
}

// Another node tells node 0 that it forwarded a signal to its workers, and
// node 0 tells it to kill them once that signal went unheeded (it alone
// knows whether any worker of the job recorded a notice).
std::string forwarded_message(int signo) { return "forwarded " + std::to_string(signo); }
constexpr const char* unheeded_message = "unheeded";

// Node 0 tells the node that runs a rank lost for its silence to kill it.
std::string fence_message(int rank) { return "fence " + std::to_string(rank); }

// Node 0 tells every node how long their workers may take (group_exit_bound).
std::string bound_message(std::chrono::seconds bound) {
  return "bound " + std::to_string(bound.count());
}

time_point bound_from_now(std::chrono::seconds bound) { return link_clock::now() + bound; }

// "rank 2, rank 3": every global rank of `node`.
std::string ranks_of(int node, int nproc) {
  std::string out;
  for (int r = node * nproc; r < (node + 1) * nproc; ++r)
    out += (out.empty() ? "rank " : ", rank ") + std::to_string(r);
  return out;
}

// A signal another node's launcher forwarded, as node 0 follows it.
struct remote_signal_state {
  int signo = 0;
  int64_t heard_at_ns = 0;  // when node 0 heard of it (forwarded_now_ns)
  unheeded_signal_check unheeded;
};

// One generation as node 0 sees it: every worker's exit, wherever it ran.
struct generation_state {
  std::vector<worker_exit> exits;
  time_point deadline = no_deadline;
  std::set<int32_t> fenced;  // ranks lost for their silence, whose node was told to kill them
  std::set<int> done_nodes;
  int remote_signal = 0;
  // Per node whose launcher forwarded a signal to its workers.
  std::map<int, remote_signal_state> forwarded;
};

// Node 0's backoff before the next start (launch_policy's
// restart_backoff), the links kept alive meanwhile. Returns the job's exit
// code when this launcher's signal or a lost node ends it first, after
// telling why (`tell`: to this launcher's stderr and the others').
std::optional<int> wait_to_restart(const node_context& ctx, child_events& children,
                                   const std::vector<node_link*>& links,
                                   std::chrono::milliseconds delay,
                                   const std::function<void(const std::string&)>& tell) {
  for (auto until = link_clock::now() + delay; link_clock::now() < until;) {
    if (ctx.received_signal != 0)
      return stopped_without_workers(ctx.received_signal, ctx.opts.restart_code,
                                     waiting_to_restart);
    auto wake = std::min(until, link_clock::now() + backoff_check_interval);
    for (auto* l : links) wake = std::min(wake, l->next_keep_alive());
    children.wait(links, wake);
    for (auto* l : links) {
      std::vector<std::string> lines;
      if (l->receive(lines) && l->keep_alive(link_clock::now())) continue;
      tell("giving up: node " + std::to_string(l->peer_node()) + "'s launcher was lost (" +
           ranks_of(l->peer_node(), ctx.opts.nproc) +
           ") while waiting for the next start: " + l->why());
      return failure_exit_code;
    }
  }
  return std::nullopt;
}

}  // namespace

int run_node_zero(const node_context& ctx, std::vector<link_ptr> links, caf::actor service,
                  const preemption_watcher& watcher) {
  const auto& opts = ctx.opts;
  child_events children;
  std::string lost;  // the first node whose launcher was lost, and why
  auto live_links = [&] {
    std::vector<node_link*> out;
    for (auto& l : links)
      if (l && l->why().empty()) out.push_back(l.get());
    return out;
  };
  auto broadcast = [&](const std::string& line) {
    for (auto* l : live_links()) l->send(line);
  };
  auto tell = [&](const std::string& line) {
    say(line);
    broadcast("say " + line);
  };
  restart_counts counts;
  for (int restart = 0;; ++restart) {
    broadcast("start " + std::to_string(restart));
    if (auto error = ctx.group.start(opts.nproc, restart)) {
      say(*error);
      ctx.group.wait_all(link_clock::now());
      broadcast("exit " + std::to_string(failure_exit_code));
      return failure_exit_code;
    }
    // As on one node: a signal during the start reached only some workers.
    if (ctx.received_signal != 0) ctx.group.signal_all(ctx.received_signal);
    generation_state gen;
    // The service hears of every exit (a worker that ended before it joined
    // has no connection whose end would tell its peers); the first exit
    // anywhere bounds how long every node's workers may take.
    auto tell_service = [&](int rank, const std::string& how) {
      caf::anon_send(service, exited_atom::value, static_cast<int32_t>(rank),
                     static_cast<uint32_t>(restart), how);
    };
    auto bound_generation = [&](std::chrono::seconds bound) {
      if (gen.deadline != no_deadline) return;
      gen.deadline = bound_from_now(bound);
      broadcast(bound_message(bound));
    };
    auto record = [&](const worker_exit& e, const std::string& how) {
      tell_service(e.rank, how);
      bound_generation(group_exit_bound(e, opts.restart_code));
      gen.exits.push_back(e);
    };
    auto record_local = [&](const worker_exit& e) {
      record(e, "(pid " + std::to_string(e.pid) + ") " + e.how());
    };
    auto lose = [&](node_link& l) {
      auto what = "node " + std::to_string(l.peer_node()) + "'s launcher was lost (" +
                  ranks_of(l.peer_node(), opts.nproc) + "): " + l.why();
      if (lost.empty()) lost = what;
      say(what);
      // Its workers died with it (or will, once they notice): the service
      // learns of those that had not joined yet, and the generation is a
      // failed one, whose other workers get the shorter bound.
      for (int r = l.peer_node() * opts.nproc; r < (l.peer_node() + 1) * opts.nproc; ++r)
        tell_service(r, "on node " + std::to_string(l.peer_node()) + " lost with its launcher");
      bound_generation(failed_group_exit_bound);
    };
    auto nodes_pending = [&] {
      return static_cast<int>(live_links().size()) -
             static_cast<int>(std::count_if(
                 gen.done_nodes.begin(), gen.done_nodes.end(),
                 [&](int n) { return links[static_cast<size_t>(n)]->why().empty(); }));
    };
    // A worker lost for its silence may be stopped or frozen and never end
    // by itself: the node that runs it kills it (lifeboat_launch's
    // run_generation says why).
    auto fence_silent = [&] {
      for (auto rank : watcher.silent_ranks(static_cast<uint32_t>(restart))) {
        if (!gen.fenced.insert(rank).second) continue;
        auto node = static_cast<size_t>(rank / opts.nproc);
        if (node == 0)
          ctx.group.kill_lost({rank});
        else if (node < links.size() && links[node] && links[node]->why().empty())
          links[node]->send(fence_message(rank));
      }
    };
    unheeded_signal_check unheeded;
    auto noticed = [&] { return !watcher.preemption_message().empty(); };
    while (!ctx.group.empty() || nodes_pending() > 0) {
      // A signal forwarded here or on another node that no worker heeds ends
      // that node's workers (unheeded_signal_check); the others then follow
      // their failure.
      if (gen.exits.empty()) {
        if (!ctx.group.empty())
          end_unheeded_workers(unheeded, ctx.group, ctx.forwarded_at_ns, ctx.received_signal,
                               noticed);
        for (auto& [node, forwarded] : gen.forwarded) {
          auto& l = links[static_cast<size_t>(node)];
          if (!l->why().empty() ||
              !forwarded.unheeded.due(link_clock::now(), forwarded.heard_at_ns, noticed))
            continue;
          tell(unheeded_signal_line(forwarded.signo, node));
          l->send(unheeded_message);
        }
      }
      // The deadline matters only while this node still has workers to end.
      auto until = ctx.group.empty() ? no_deadline : gen.deadline;
      for (auto* l : live_links()) until = std::min(until, l->next_keep_alive());
      until = std::min(until, link_clock::now() + silent_check_interval);
      children.wait(live_links(), until);
      fence_silent();
      while (auto e = ctx.group.wait_any(link_clock::now())) record_local(*e);
      if (link_clock::now() >= gen.deadline)
        for (auto& e : ctx.group.wait_all(link_clock::now())) record_local(e);
      for (auto* l : live_links()) {
        std::vector<std::string> lines;
        auto ok = l->receive(lines) && l->keep_alive(link_clock::now());
        for (auto& line : lines) {
          int signo = 0;
          if (auto e = decode_exit(line))
            record(*e, "(pid " + std::to_string(e->pid) + " on node " +
                           std::to_string(l->peer_node()) + ") " + e->how());
          else if (std::sscanf(line.c_str(), "done %*d %d", &signo) == 1) {
            gen.done_nodes.insert(l->peer_node());
            if (gen.remote_signal == 0) gen.remote_signal = signo;
          } else if (std::sscanf(line.c_str(), "forwarded %d", &signo) == 1) {
            gen.forwarded[l->peer_node()] = {signo, forwarded_now_ns(), {}};
          }
        }
        if (!ok) lose(*l);
      }
    }
    if (!lost.empty()) {
      // The job cannot go on without that node's workers, and a launcher that
      // vanished will not take part in another generation: end the job.
      std::vector<std::string> lines;
      auto result = classify_generation(gen.exits, opts.restart_code, [] { return std::string{}; });
      for (auto& f : result.failures) lines.push_back(f.describe());
      lines.push_back("giving up: " + lost);
      for (auto& line : lines) tell(line);
      broadcast("exit " + std::to_string(failure_exit_code));
      return failure_exit_code;
    }
    auto result = classify_generation(gen.exits, opts.restart_code, [&] {
      return watcher.failure_message(static_cast<uint32_t>(restart), failure_origin_wait);
    });
    auto signo = ctx.received_signal != 0 ? ctx.received_signal.load() : gen.remote_signal;
    auto v = decide(result, signo, counts, opts.max_restarts, opts.restart_code, opts.world_size(),
                    [&] { return watcher.preemption_message(); });
    for (auto& line : v.lines) tell(line);
    if (!v.exit_code) v.exit_code = wait_to_restart(ctx, children, live_links(), v.delay, tell);
    if (v.exit_code) {
      broadcast("exit " + std::to_string(*v.exit_code));
      return *v.exit_code;
    }
  }
}

int run_other_node(const node_context& ctx, node_link& link) {
  const auto& opts = ctx.opts;
  child_events children;
  auto deadline = no_deadline;
  int generation = -1;
  bool started = false;
  bool told_forwarded = false;  // node 0 knows of the signal forwarded to this generation
  for (;;) {
    auto until = link.next_keep_alive();
    if (!ctx.group.empty()) until = std::min(until, deadline);
    children.wait({&link}, until);
    // A signal before the first start (node 0 still waits for other nodes)
    // has no worker to reach: this launcher ends, as node 0's would, and
    // node 0 sees its place open again. Noticed within a heartbeat interval.
    if (!started && ctx.received_signal != 0)
      return stopped_without_workers(ctx.received_signal, opts.restart_code, waiting_for_launchers);
    std::vector<worker_exit> exits;
    while (auto e = ctx.group.wait_any(link_clock::now())) exits.push_back(*e);
    if (link_clock::now() >= deadline)
      for (auto& e : ctx.group.wait_all(link_clock::now())) exits.push_back(e);
    for (auto& e : exits) {
      if (deadline == no_deadline)
        deadline = bound_from_now(group_exit_bound(e, opts.restart_code));
      link.send(encode(e));
    }
    // Node 0 decides whether this node's workers heeded the signal.
    if (generation >= 0 && ctx.received_signal != 0 && !told_forwarded) {
      link.send(forwarded_message(ctx.received_signal));
      told_forwarded = true;
    }
    if (generation >= 0 && ctx.group.empty()) {
      link.send("done " + std::to_string(generation) + " " + std::to_string(ctx.received_signal));
      generation = -1;
      deadline = no_deadline;
    }
    std::vector<std::string> lines;
    auto ok = link.receive(lines) && link.keep_alive(link_clock::now());
    for (auto& line : lines) {
      int value = 0;
      if (line.rfind("say ", 0) == 0) {
        say(line.substr(4));
      } else if (std::sscanf(line.c_str(), "exit %d", &value) == 1) {
        ctx.group.wait_all(link_clock::now());
        return value;
      } else if (std::sscanf(line.c_str(), "fence %d", &value) == 1) {
        ctx.group.kill_lost({value});
      } else if (line == unheeded_message) {
        ctx.group.kill_unheeded();
      } else if (std::sscanf(line.c_str(), "bound %d", &value) == 1) {
        if (deadline == no_deadline) deadline = bound_from_now(std::chrono::seconds{value});
      } else if (std::sscanf(line.c_str(), "start %d", &value) == 1) {
        deadline = no_deadline;
        generation = value;
        started = true;
        told_forwarded = false;
        if (auto error = ctx.group.start(opts.nproc, value)) {
          say(*error);
          ctx.group.wait_all(link_clock::now());
          return failure_exit_code;
        }
        if (ctx.received_signal != 0) ctx.group.signal_all(ctx.received_signal);
      }
    }
    if (!ok) {
      // Without node 0 there is no coordination service and nobody to decide
      // the next generation: end this node's workers rather than leave them
      // waiting on a service that is gone.
      ctx.group.wait_all(link_clock::now());
      say("lost node 0's launcher at " + endpoint{opts.host, opts.control_port}.to_string() + ": " +
          link.why() + "; ended this node's workers");
      return failure_exit_code;
    }
  }
}

}  // namespace lifeboat::apps
