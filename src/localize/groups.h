// Workers are compared only with their like (DESIGN.md "Compare only like with like"): data-
// parallel ranks run the same functions; pipeline stages or parameter servers do not.
#pragma once

#include <string>
#include <vector>

#include "summary/pattern.h"

namespace eroica {

struct WorkerGroup {
  std::vector<const WorkerPattern*> workers;
};

// Groups by kind of run (GPU or CPU), declared role (WorkerPattern::group, from process groups)
// and the functions they run: Jaccard similarity of their compute and communication functions.
std::vector<WorkerGroup> GroupWorkers(const std::vector<WorkerPattern>& workers);

// Views over a group.
double MedianIterationS(const WorkerGroup& group);
std::vector<double> CategoryBetas(const WorkerGroup& group, Category category);
const FunctionPattern* FindFunction(const WorkerPattern& worker, const std::string& name,
                                    Category category);
// β of one function on every worker of the group (0 where the worker does not run it).
std::vector<double> FunctionBetas(const WorkerGroup& group, const std::string& name, Category category);

}  // namespace eroica
