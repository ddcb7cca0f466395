#include "platform/notice_source.hpp"

#include <map>

#include "messages/errors.hpp"
#include "platform/aws_source.hpp"
#include "platform/azure_source.hpp"
#include "platform/file_source.hpp"
#include "platform/gce_source.hpp"

namespace lifeboat {

namespace {

constexpr char kFilePrefix[] = "file:";

using factory = std::function<caf::expected<notice_source_ptr>(const env_lookup&)>;

// The sources named by a plain word; "file:" takes a path and is handled apart.
const std::map<std::string, factory>& named_sources() {
  static const std::map<std::string, factory> registry{
      {"gce", [](const env_lookup& env) { return make_gce_source(env); }},
      {"aws", [](const env_lookup& env) { return make_aws_source(env, false); }},
      {"aws-rebalance", [](const env_lookup& env) { return make_aws_source(env, true); }},
      {"azure", [](const env_lookup& env) { return make_azure_source(env); }},
  };
  return registry;
}

class function_source : public notice_source {
 public:
  explicit function_source(std::function<bool()> fn) : fn_(std::move(fn)) {}

  std::string name() const override { return "termination_watcher_fn"; }

  caf::expected<std::optional<notice>> poll(std::chrono::milliseconds) override {
    if (seen_) return seen_;
    try {
      if (fn_()) seen_ = notice{name(), "termination_watcher_fn returned true", 0};
    } catch (const std::exception& e) {
      return make_error(errc::unavailable,
                        std::string{"termination_watcher_fn threw: "} + e.what());
    } catch (...) {
      return make_error(errc::unavailable, "termination_watcher_fn threw a non-standard exception");
    }
    return seen_;
  }

 private:
  std::function<bool()> fn_;
  std::optional<notice> seen_;
};

}  // namespace

std::string known_notice_sources() {
  std::string out;
  for (auto& [name, make] : named_sources()) out += name + ", ";
  return out + kFilePrefix + "/path";
}

caf::expected<notice_source_ptr> make_notice_source(const std::string& spec,
                                                    const env_lookup& env) {
  if (spec.rfind(kFilePrefix, 0) == 0)
    return make_file_source(spec.substr(sizeof(kFilePrefix) - 1));
  auto i = named_sources().find(spec);
  if (i == named_sources().end())
    return make_error(errc::invalid_config,
                      "unknown notice source '" + spec + "'; known: " + known_notice_sources());
  return i->second(env);
}

caf::expected<notice_source_ptr> make_notice_source(const std::string& spec) {
  return make_notice_source(spec, process_environment());
}

notice_source_ptr make_function_source(std::function<bool()> termination_watcher_fn) {
  return std::make_unique<function_source>(std::move(termination_watcher_fn));
}

}  // namespace lifeboat
