// Kept for tests/actors/CMakeLists.txt and compiled nowhere: a coordination
// source that includes only what its layer may (its own folder, the actors'
// shared headers, messages, the checkpoint's interfaces, system headers).
#include "actors/coordination/coordination_state.hpp"

#include <string>

#include "actors/atoms.hpp"
#include "checkpoint/barrier.hpp"
#include "messages/errors.hpp"
