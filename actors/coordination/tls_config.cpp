#include "actors/coordination/tls_config.hpp"

#include <array>

#include "messages/errors.hpp"

namespace lifeboat {

namespace {

constexpr std::array<const char*, 3> true_words{"1", "on", "true"};
constexpr std::array<const char*, 3> false_words{"0", "off", "false"};

std::string env_or_empty(const std::function<const char*(const char*)>& getenv_fn,
                         const char* name) {
  auto value = getenv_fn(name);
  return value != nullptr ? value : "";
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

caf::expected<tls_config> read_tls_config(const std::function<const char*(const char*)>& getenv_fn,
                                          bool spans_hosts) {
  tls_config cfg;
  cfg.enabled = spans_hosts;
  if (auto value = env_or_empty(getenv_fn, tls_env); !value.empty()) {
    auto is = [&value](const auto& words) {
      for (auto word : words)
        if (value == word) return true;
      return false;
    };
    if (is(true_words))
      cfg.enabled = true;
    else if (is(false_words))
      cfg.enabled = false;
    else
      return make_error(errc::invalid_config,
                        std::string{tls_env} + "=" + value + ": expected 1/on/true or 0/off/false");
  }
  cfg.cert_file = env_or_empty(getenv_fn, tls_cert_env);
  cfg.key_file = env_or_empty(getenv_fn, tls_key_env);
  cfg.ca_file = env_or_empty(getenv_fn, tls_ca_env);
  auto given = !cfg.cert_file.empty() + !cfg.key_file.empty() + !cfg.ca_file.empty();
  if (given != 0 && given != 3)
    return make_error(errc::invalid_config, std::string{tls_cert_env} + ", " + tls_key_env +
                                                " and " + tls_ca_env +
                                                " go together: set all three or none");
  return cfg;
}

}  // namespace lifeboat
