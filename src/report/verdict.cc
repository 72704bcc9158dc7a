#include "report/verdict.h"

#include <fmt/core.h>

#include <cmath>

namespace eroica {
namespace {

bool CoversEveryone(const Finding& f, int total) { return total > 1 && static_cast<int>(f.workers.size()) >= total; }

std::string ListRanks(const Finding& f) {
  std::string out;
  for (size_t i = 0; i < f.workers.size(); ++i) {
    if (i > 0) out += i + 1 == f.workers.size() ? " and " : ", ";
    out += std::to_string(f.workers[i]);
  }
  return out;
}

}  // namespace

std::string WorkersPhrase(const Finding& f, int total) {
  if (f.workers.empty()) return f.scope == FindingScope::kGlobal ? "Every rank" : "An unknown rank";
  if (CoversEveryone(f, total)) return fmt::format("All {} ranks", total);
  if (f.workers.size() == 1) return fmt::format("Rank {}", f.workers[0]);
  if (f.workers.size() <= 6) return fmt::format("Ranks {}", ListRanks(f));
  return fmt::format("{} ranks", f.workers.size());
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  double ms = seconds * 1e3;
  if (std::fabs(ms) >= 1000) return fmt::format("{:.2f} s", seconds);
  if (std::fabs(ms) >= 10) return fmt::format("{:.1f} ms", ms);
  if (std::fabs(ms) >= 1) return fmt::format("{:.2f} ms", ms);
  return fmt::format("{:.3f} ms", ms);
}

std::string FindingSentence(const Finding& f, int total) {
  std::string who = WorkersPhrase(f, total);
  bool plural = f.workers.size() != 1 || CoversEveryone(f, total);
  std::string what = f.function.empty() ? "" : " " + InParentheses(f.function);
  if (f.category == FindingCategory::kHang) {
    std::string where = f.location.empty() ? f.function : f.location;
    std::string others = total > static_cast<int>(f.workers.size()) ? "; the other ranks wait for it" : "";
    return fmt::format("{} {} stuck{}{}.", who, plural ? "are" : "is", where.empty() ? "" : " at " + where, others);
  }
  std::string lose = plural ? "lose" : "loses";
  std::string cost = fmt::format("{} per iteration", FormatDuration(f.impact_s_per_iter));
  if (f.category == FindingCategory::kImbalance) {
    return fmt::format("{} {} given more work than {} peers{}: {} {}.", who, plural ? "are" : "is",
                       plural ? "their" : "its", what, lose, cost);
  }
  std::string sentence = fmt::format("{} {} {} in {}{}", who, lose, cost, InfoOf(f.category).phrase, what);
  int others = total - static_cast<int>(f.workers.size());
  if (f.scope == FindingScope::kLocal && others > 0) {
    std::string them = plural ? "them" : "it";
    sentence += others == 1 ? fmt::format("; the other rank waits for {}", them)
                            : fmt::format("; the other {} ranks wait for {}", others, them);
  }
  return sentence + ".";
}

}  // namespace eroica
