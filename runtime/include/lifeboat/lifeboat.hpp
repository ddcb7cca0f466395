#pragma once

// Everything a trainer may call.
#include "lifeboat/checkpoint_state.hpp"
#include "lifeboat/errors.hpp"
#include "lifeboat/handler.hpp"
#include "lifeboat/restore_checkpoint.hpp"
#include "lifeboat/termination_config.hpp"
