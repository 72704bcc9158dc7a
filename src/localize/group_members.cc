#include "localize/group_members.h"

namespace eroica {

std::unordered_map<int, size_t> MembersByRank(const WorkerGroup& group) {
  std::unordered_map<int, size_t> member_of;
  for (size_t k = 0; k < group.size(); ++k) member_of.emplace(group.row(k).rank, k);
  return member_of;
}

std::optional<size_t> MemberNamedAlone(const std::unordered_map<int, size_t>& member_of, const Finding& f) {
  if (f.scope != FindingScope::kLocal || f.workers.size() != 1) return std::nullopt;
  auto member = member_of.find(f.workers[0]);
  if (member == member_of.end()) return std::nullopt;
  return member->second;
}

std::vector<bool> NamedAlone(const WorkerGroup& group, const std::vector<Finding>& local) {
  std::unordered_map<int, size_t> member_of = MembersByRank(group);
  std::vector<bool> named(group.size(), false);
  for (const Finding& f : local) {
    if (std::optional<size_t> k = MemberNamedAlone(member_of, f)) named[*k] = true;
  }
  return named;
}

double StragglerFloor(const WorkerGroup& group, const Expectations& e) {
  return static_cast<double>(group.size()) < e.small_group ? e.small_group_min_excess_beta : e.min_excess_beta;
}

}  // namespace eroica
