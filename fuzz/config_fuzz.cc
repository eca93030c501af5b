// The YAML files Tutti reads — serve configs, model configs and simulator
// experiments — on arbitrary text. The first byte picks which.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tutti/repository/model_config.h"
#include "tutti/deployment/server_config.h"
#include "tutti/simulator/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      (void)tutti::ParseServerConfig(text);
      break;
    case 1:
      (void)tutti::ParseModelConfig(text);
      break;
    default:
      // Files an experiment names (traces, zoo tables) resolve under a
      // folder that does not exist.
      (void)tutti::ParseExperiment(text, "/nonexistent-tutti-fuzz");
      break;
  }
  return 0;
}
