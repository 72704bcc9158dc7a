#include "report/source_excerpt.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "base/file_util.h"

namespace eroica {
namespace {

namespace fs = std::filesystem;

constexpr uintmax_t kMaxSourceBytes = 4 << 20;

bool Contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A code fence longer than any run of backticks inside the text.
std::string Fence(const std::vector<std::string>& lines) {
  size_t longest = 0;
  for (const std::string& line : lines) {
    size_t run = 0;
    for (char c : line) {
      run = c == '`' ? run + 1 : 0;
      longest = std::max(longest, run);
    }
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

}  // namespace

bool IsJobSourcePath(std::string_view path) {
  if (path.empty() || !path.ends_with(".py") || path.front() == '<') return false;
  for (std::string_view marker :
       {"/site-packages/", "/dist-packages/", "/lib/python", "<frozen", "/.ssh/", "/.aws/", "/.config/", "/.git/"}) {
    if (Contains(path, marker)) return false;
  }
  for (std::string_view prefix : {"/usr/", "/lib/", "/lib64/", "/etc/", "/proc/", "/sys/", "/dev/", "/boot/",
                                  "/var/lib/", "/opt/conda/", "/root/.", "/snap/"}) {
    if (path.starts_with(prefix)) return false;
  }
  return true;
}

std::string ShortLibraryPath(std::string_view path) {
  for (std::string_view marker : {"/site-packages/", "/dist-packages/"}) {
    size_t at = path.rfind(marker);
    if (at != std::string_view::npos) return std::string(path.substr(at + marker.size()));
  }
  size_t at = path.find("/lib/python");
  if (at != std::string_view::npos) return std::string(path.substr(at + 5));
  return std::string(path);
}

std::string RedactCredentials(std::string_view line) {
  std::string lower = Lower(line);
  bool credential = false;
  for (std::string_view word :
       {"password", "passwd", "secret", "token", "api_key", "apikey", "access_key", "private_key", "credential"}) {
    credential = credential || Contains(lower, word);
  }
  if (!credential || (!Contains(line, "=") && !Contains(line, ":"))) return std::string(line);
  std::string out;
  char quote = 0;
  for (char c : line) {
    if (quote == 0) {
      out.push_back(c);
      if (c == '"' || c == '\'') {
        quote = c;
        out += "<redacted>";
      }
    } else if (c == quote) {
      out.push_back(c);
      quote = 0;
    }
  }
  return out;
}

StatusOr<SourceExcerpt> ReadSourceExcerpt(const std::string& path, int line, int radius,
                                          const std::vector<std::string>& roots) {
  if (!IsJobSourcePath(path)) return ErrorStatus("{}: not the job's own Python code, not read", path);
  if (line <= 0) return ErrorStatus("{}: no line number", path);
  std::vector<fs::path> candidates;
  if (fs::path(path).is_absolute()) {
    candidates.push_back(path);
  } else {
    for (const std::string& root : roots) candidates.push_back(fs::path(root) / path);
  }
  for (const fs::path& candidate : candidates) {
    std::error_code error;
    fs::path resolved = fs::canonical(candidate, error);
    if (error || !fs::exists(resolved, error)) continue;
    if (!IsJobSourcePath(resolved.string())) return ErrorStatus("{}: resolves outside the job's code, not read", path);
    // The one reader (regular files only, bounded): a FIFO named by a stack dump cannot hang us.
    StatusOr<std::string> contents = ReadSmallFile(resolved.string(), kMaxSourceBytes);
    if (!contents.ok()) return ErrorStatus("{}: not quoted: {}", path, contents.status().message());
    std::istringstream in(*contents);
    SourceExcerpt excerpt;
    excerpt.path = resolved.string();
    excerpt.first_line = std::max(1, line - radius);
    excerpt.target_line = line;
    std::string text;
    for (int number = 1; std::getline(in, text) && number <= line + radius; ++number) {
      if (number >= excerpt.first_line) excerpt.lines.push_back(RedactCredentials(text));
    }
    if (line >= excerpt.first_line + static_cast<int>(excerpt.lines.size())) {
      return ErrorStatus("{}: has no line {} (the file changed since the run?)", path, line);
    }
    return excerpt;
  }
  return ErrorStatus("{}: not readable here", path);
}

std::string FormatExcerptMarkdown(const SourceExcerpt& excerpt) {
  std::string fence = Fence(excerpt.lines);
  std::string out = fence + "python\n";
  int width = static_cast<int>(std::to_string(excerpt.first_line + excerpt.lines.size()).size());
  for (size_t i = 0; i < excerpt.lines.size(); ++i) {
    int number = excerpt.first_line + static_cast<int>(i);
    out += fmt::format("{} {:>{}} | {}\n", number == excerpt.target_line ? ">" : " ", number, width, excerpt.lines[i]);
  }
  return out + fence + "\n";
}

}  // namespace eroica
