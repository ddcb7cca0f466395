// Kept for tests/actors/CMakeLists.txt and compiled nowhere: a coordination
// source that reaches into the preemption protocol, which the layering check
// must reject.
#include "actors/coordination/coordination_state.hpp"
#include "actors/preemption/phase.hpp"
