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
  // "  term  text" lines: help2man makes each a tagged paragraph of the manual page.
  return fmt::format(
      "eroica {}\n"
      "reads:\n"
      "  traces     PyTorch profiler traces: Kineto JSON object or bare event list, .json or .json.gz\n"
      "  patterns   pattern files, magic \"{}\", format version {}\n"
      "  metrics    the agent's metrics files, magic \"{}\", format version {}\n"
      "  diagnoses  {} (annotate --diagnosis)\n"
      "  sessions   session.json (eroica.session/v1), rank-<r>.meta.json, stacks-rank-<r>.json\n"
      "writes:\n"
      "  patterns   format version {}; {} (show --format json)\n"
      "  diagnoses  {} (diagnose --format json)\n"
      "  metrics    format version {} (agent)\n"
      "A file of a newer format version is refused with one line naming it.",
      kEroicaVersion, pattern_magic, pattern_version, metrics_magic, agent::kMetricsFileVersion, kDiagnosisSchema,
      pattern_version, kPatternJsonSchema, kDiagnosisSchema, agent::kMetricsFileVersion);
}

}  // namespace eroica
