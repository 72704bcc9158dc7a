#include "cli/version_text.h"

#include <fmt/core.h>

#include "agent/metrics_file.h"
#include "agent/metrics_file_writer.h"
#include "cli/eroica_version.h"
#include "report/diagnosis_json.h"
#include "summary/pattern_file.h"
#include "summary/pattern_json.h"

namespace eroica {

// Formats are named by the constants their readers and writers use, so this cannot drift.
std::string VersionText() {
  std::string_view pattern_magic = kPatternMagic.substr(0, kPatternMagic.size() - 1);
  int pattern_version = static_cast<unsigned char>(kPatternMagic.back());
  std::string_view metrics_magic(agent::kMetricsFileMagic, sizeof(agent::kMetricsFileMagic));
  return fmt::format(
      "eroica {}\n"
      "reads:\n"
      "  PyTorch profiler traces (Kineto JSON object or bare event list, .json or .json.gz)\n"
      "  pattern files: magic \"{}\", format version {}\n"
      "  metrics files: magic \"{}\", format version {}\n"
      "  {} (annotate --diagnosis)\n"
      "  session folders: session.json (eroica.session/v1), rank-<r>.meta.json, stacks-rank-<r>.json\n"
      "writes:\n"
      "  pattern files: format version {}; {} (show --format json)\n"
      "  {} (diagnose --format json)\n"
      "  metrics files: format version {} (agent)\n"
      "A file of a newer format version is refused with one line naming it.",
      kEroicaVersion, pattern_magic, pattern_version, metrics_magic, agent::kMetricsFileVersion,
      kDiagnosisSchema, pattern_version, kPatternJsonSchema, kDiagnosisSchema,
      agent::kMetricsFileVersion);
}

}  // namespace eroica
