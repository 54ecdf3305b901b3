// The interface a neuron model compiled apart from the engine presents to it (a shared object
// that load_neuron_model(), cpp/neurons/registry.cpp, loads: ranvier.nestml's generated models).
//
// A shared object shares the engine's structures (NeuronModel, NeuronColumns, StepInput,
// PopulationSpec, ...) only if both were compiled from the same headers by the same compiler:
// RANVIER_MODEL_ABI, made by the build (CMakeLists.txt), is the SHA-256 of every header installed
// with the package (these folders, ranvier/include) and the compiler's name and version. A model
// returns the one it was compiled with from ranvier_model_abi(); the engine refuses any other.
#pragma once
#include "ranvier_model_abi.h"   // generated: #define RANVIER_MODEL_ABI "<digest>"
#include "neurons/neuron_model.hpp"

namespace ranvier {

inline constexpr const char* kModelAbi = RANVIER_MODEL_ABI;
inline constexpr const char* kModelAbiSymbol = "ranvier_model_abi";
inline constexpr const char* kModelEntrySymbol = "ranvier_neuron_model";

}  // namespace ranvier

// In a model's file, at namespace scope, after its `const NeuronModel`: the two entry points.
#define RANVIER_EXPORT_NEURON_MODEL(model)                                                     \
  extern "C" __attribute__((visibility("default"))) const char* ranvier_model_abi() {          \
    return RANVIER_MODEL_ABI;                                                                  \
  }                                                                                            \
  extern "C" __attribute__((visibility("default"))) const ::ranvier::NeuronModel* ranvier_neuron_model() { \
    return &(model);                                                                           \
  }
