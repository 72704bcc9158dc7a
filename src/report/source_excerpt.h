// The few source lines around a code location, for the AI prompt, under a strict policy: only
// a Python file that a stack or a finding names, only the job's own code (never the standard
// library, site-packages/dist-packages, /usr, /etc, /proc ...), never through a symlink that
// leaves the job's code, and with credential-looking literals redacted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace eroica {

struct SourceExcerpt {
  std::string path;    // the file read (as resolved)
  int first_line = 0;  // number of lines[0]
  int target_line = 0;
  std::vector<std::string> lines;
};

// True for paths that may be the job's own Python code.
bool IsJobSourcePath(std::string_view path);

// A library path made short and machine-independent: ".../site-packages/torch/x.py" ->
// "torch/x.py", "/usr/lib/python3.11/threading.py" -> "python3.11/threading.py".
std::string ShortLibraryPath(std::string_view path);

// Reads lines [line - radius, line + radius] of `path`. A relative path is tried under each
// of `roots` in turn. Errors say why nothing was read (outside the job's code, unreadable ...).
StatusOr<SourceExcerpt> ReadSourceExcerpt(const std::string& path, int line, int radius,
                                          const std::vector<std::string>& roots);

// Replaces string literals on lines that assign something named like a credential.
std::string RedactCredentials(std::string_view line);

// The excerpt as a fenced Markdown block with line numbers and the target line marked.
std::string FormatExcerptMarkdown(const SourceExcerpt& excerpt);

}  // namespace eroica
