#include "checkpoint/state_registry.hpp"

#include <algorithm>

#include "checkpoint/device_memory.hpp"
#include "messages/errors.hpp"
#include "messages/utf8.hpp"

namespace lifeboat::checkpoint {

const char* to_string(buffer_kind kind) {
  switch (kind) {
    case buffer_kind::host:
      return "host";
    case buffer_kind::device:
      return "device";
    case buffer_kind::callbacks:
      return "callbacks";
  }
  return "unknown";
}

caf::error state_registry::check_new_name(const std::string& name) const {
  if (sealed_)
    return make_error(errc::invalid_argument,
                      "checkpoint buffer '" + to_utf8(name) +
                          "' registered after the handler was constructed: the restore at the "
                          "next start would come before it and could not read the checkpoint "
                          "back; register every buffer before constructing the handler");
  if (name.empty()) return make_error(errc::invalid_argument, "checkpoint buffer without a name");
  // The shard index keeps names as protobuf strings: one that is not UTF-8
  // would be written, and every checkpoint holding it would not read back.
  if (!is_utf8(name))
    return make_error(errc::invalid_argument,
                      "checkpoint buffer name '" + to_utf8(name) + "' is not UTF-8");
  if (names_.count(name) > 0)
    return make_error(errc::invalid_argument, "checkpoint buffer '" + name + "' registered twice");
  return {};
}

caf::error state_registry::add_memory(std::string name, buffer_kind kind, void* data,
                                      std::size_t bytes) {
  if (data == nullptr && bytes > 0)
    return make_error(errc::invalid_argument, "checkpoint buffer '" + name + "' has no memory");
  registered_buffer entry;
  entry.name = std::move(name);
  entry.kind = kind;
  entry.data = data;
  entry.size = bytes;
  names_.insert(entry.name);
  buffers_.push_back(std::move(entry));
  return {};
}

caf::error state_registry::add_host_buffer(std::string name, void* data, std::size_t bytes) {
  if (auto err = check_new_name(name)) return err;
  return add_memory(std::move(name), buffer_kind::host, data, bytes);
}

caf::error state_registry::add_device_buffer(std::string name, void* device_data,
                                             std::size_t bytes) {
  if (auto err = check_new_name(name)) return err;
  if (auto err = device::available())
    return wrap_error(errc::unavailable, "device buffer '" + name + "' cannot be checkpointed",
                      err);
  return add_memory(std::move(name), buffer_kind::device, device_data, bytes);
}

caf::error state_registry::add_callbacks(std::string name, save_fn save, restore_fn restore) {
  if (auto err = check_new_name(name)) return err;
  if (!save || !restore)
    return make_error(errc::invalid_argument,
                      "checkpoint callbacks '" + name + "' need both save and restore");
  registered_buffer entry;
  entry.name = std::move(name);
  entry.kind = buffer_kind::callbacks;
  entry.save = std::move(save);
  entry.restore = std::move(restore);
  names_.insert(entry.name);
  buffers_.push_back(std::move(entry));
  return {};
}

caf::error state_registry::add_check(check_fn check) {
  if (sealed_)
    return make_error(errc::invalid_argument,
                      "checkpoint check registered after the handler was constructed: register "
                      "it with the state it checks");
  if (!check) return make_error(errc::invalid_argument, "checkpoint check without a function");
  checks_.push_back(std::move(check));
  return {};
}

caf::error state_registry::run_checks() const {
  for (auto& check : checks_) {
    try {
      check();
    } catch (const std::exception& e) {
      return make_error(errc::invalid_config, e.what());
    }
  }
  return {};
}

bool state_registry::has_device_buffers() const {
  return std::any_of(buffers_.begin(), buffers_.end(),
                     [](const registered_buffer& b) { return b.kind == buffer_kind::device; });
}

}  // namespace lifeboat::checkpoint
