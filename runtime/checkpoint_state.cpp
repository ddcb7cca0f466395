#include "lifeboat/checkpoint_state.hpp"

#include "checkpoint/state_registry.hpp"
#include "lifeboat/errors.hpp"
#include "messages/errors.hpp"

namespace lifeboat {

namespace {

// The public API reports bad registrations as exceptions, the internal one as errors.
void throw_on_error(const caf::error& err) {
  if (err) throw config_error(describe(err));
}

}  // namespace

checkpoint_state::checkpoint_state() : registry_(std::make_unique<checkpoint::state_registry>()) {}

checkpoint_state::~checkpoint_state() = default;

checkpoint_state::checkpoint_state(checkpoint_state&&) noexcept = default;

checkpoint_state& checkpoint_state::operator=(checkpoint_state&&) noexcept = default;

void checkpoint_state::add_buffer(std::string name, void* data, std::size_t bytes) {
  throw_on_error(registry_->add_host_buffer(std::move(name), data, bytes));
}

void checkpoint_state::add_device_buffer(std::string name, void* device_data, std::size_t bytes) {
  throw_on_error(registry_->add_device_buffer(std::move(name), device_data, bytes));
}

void checkpoint_state::add_callbacks(std::string name, std::function<std::string()> save,
                                     std::function<void(const std::string&)> restore) {
  throw_on_error(registry_->add_callbacks(std::move(name), std::move(save), std::move(restore)));
}

void checkpoint_state::add_check(std::function<void()> check) {
  throw_on_error(registry_->add_check(std::move(check)));
}

checkpoint::state_registry& checkpoint_state::registry() { return *registry_; }

}  // namespace lifeboat
