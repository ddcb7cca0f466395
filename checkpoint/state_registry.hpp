#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <caf/error.hpp>

namespace lifeboat::checkpoint {

enum class buffer_kind { host, device, callbacks };

const char* to_string(buffer_kind kind);

using save_fn = std::function<std::string()>;
using restore_fn = std::function<void(const std::string&)>;
/// A test that the registration still stands for the state: it throws (any
/// std::exception) when it does not.
using check_fn = std::function<void()>;

/// One named piece of the state a worker checkpoints.
struct registered_buffer {
  std::string name;
  buffer_kind kind = buffer_kind::host;
  void* data = nullptr;  // host or device address (host and device kinds)
  std::size_t size = 0;  // bytes (host and device kinds)
  save_fn save;          // callbacks kind
  restore_fn restore;    // callbacks kind
};

/// The named buffers that make up this rank's shard, in registration order
/// (which is their order in the data file). Not thread-safe: register
/// everything before the first save or restore. Every add_* refuses with
/// errc::invalid_argument a name that is empty, not UTF-8 or already taken.
class state_registry {
 public:
  /// Host memory read when saving and overwritten when restoring.
  caf::error add_host_buffer(std::string name, void* data, std::size_t bytes);

  /// Device memory, copied through pinned host memory; errc::unavailable
  /// without CUDA compiled in or without a usable device.
  caf::error add_device_buffer(std::string name, void* device_data, std::size_t bytes);

  /// State of any size: `save` returns its bytes, `restore` receives them back.
  caf::error add_callbacks(std::string name, save_fn save, restore_fn restore);

  /// A check run before every save and restore (run_checks). A framework
  /// may move or replace the memory it registered (PyTorch's module.to()),
  /// and lifeboat would then save and restore memory the state left: the
  /// framework's binding checks for that here.
  caf::error add_check(check_fn check);

  /// Runs every check in registration order: the first that throws is
  /// errc::invalid_config with its what().
  caf::error run_checks() const;

  const std::vector<registered_buffer>& buffers() const { return buffers_; }

  bool has_device_buffers() const;

  /// Ends the registration: every add_* from now on fails
  /// (errc::invalid_argument). A handler seals its state as it is
  /// constructed: it restores into what is registered then, so a checkpoint
  /// that also held a later registration would not read back at the next
  /// start, and its saver reads the buffers from other threads.
  void seal() { sealed_ = true; }

 private:
  caf::error check_new_name(const std::string& name) const;
  caf::error add_memory(std::string name, buffer_kind kind, void* data, std::size_t bytes);

  std::vector<registered_buffer> buffers_;
  // The names in buffers_: a search of buffers_ for each new one made
  // registering 80,000 tensors take 18 s.
  std::unordered_set<std::string> names_;
  std::vector<check_fn> checks_;
  bool sealed_ = false;
};

}  // namespace lifeboat::checkpoint
