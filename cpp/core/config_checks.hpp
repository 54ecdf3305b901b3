// The configuration's checks, made before anything is built: every error names the field and,
// where there is one, the fix. Python validates the description first; these guard the engine
// against any caller.
#pragma once
#include "base/spec.hpp"

namespace ranvier {

// Throws std::invalid_argument for a configuration the engine cannot run; fills in defaults
// (drive_steps 0: steps_per_cycle).
void check_config(EngineConfig& cfg);

}  // namespace ranvier
