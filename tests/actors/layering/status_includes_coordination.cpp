// Kept for tests/actors/CMakeLists.txt and compiled nowhere: a status source
// that reads the coordination service's state instead of the ActorStatus it
// answers, which the layering check must reject.
#include "actors/coordination/coordination_state.hpp"
#include "actors/status/status_endpoint.hpp"
