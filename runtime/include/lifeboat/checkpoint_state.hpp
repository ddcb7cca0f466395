#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace lifeboat {

namespace checkpoint {
class state_registry;
}

/// What a worker checkpoints: named buffers it owns (host memory, or device
/// memory when CUDA is compiled in) and named user state saved through
/// callbacks. Names, sizes and world size must match on restore. Everything
/// is registered before a handler is constructed with it: from then on
/// every add_* throws config_error.
class checkpoint_state {
 public:
  checkpoint_state();
  ~checkpoint_state();
  checkpoint_state(checkpoint_state&&) noexcept;
  checkpoint_state& operator=(checkpoint_state&&) noexcept;

  /// Host memory that lifeboat reads when saving and overwrites when restoring.
  void add_buffer(std::string name, void* data, std::size_t bytes);

  /// Device memory; copied through pinned host memory. Throws config_error
  /// when CUDA is not compiled in or no device is present.
  void add_device_buffer(std::string name, void* device_data, std::size_t bytes);

  /// Arbitrary state: `save` returns its bytes, `restore` receives them back.
  void add_callbacks(std::string name, std::function<std::string()> save,
                     std::function<void(const std::string&)> restore);

  /// A test run before every save and before the restore as a handler is
  /// constructed: it throws (any std::exception) when a registered buffer is
  /// no longer the memory of the state it stands for (a framework moved or
  /// replaced it), and lifeboat would save and restore memory the state
  /// left. The save then fails, or the handler's construction throws
  /// config_error, with its what(). Called on the training thread.
  void add_check(std::function<void()> check);

  checkpoint::state_registry& registry();

 private:
  std::unique_ptr<checkpoint::state_registry> registry_;
};

}  // namespace lifeboat
