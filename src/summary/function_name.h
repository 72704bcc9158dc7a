// Function identity that is stable across ranks: the same code gets the same name on every
// worker, whatever its addresses, pids or template arguments.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "summary/category.h"
#include "summary/classify.h"

namespace eroica {

// kernel "void at::native::foo<4, float>(int, ...)" -> "at::native::foo";
// python "torch/nn/modules/module.py(1775): _call_impl" -> "torch/nn/modules/module.py:1775(_call_impl)";
// collectives -> "allreduce" or "allreduce 4MiB" (op plus a power-of-4 size bucket);
// everything else keeps its name, capped in length.
std::string FunctionName(EventRole role, std::string_view name, std::string_view collective_arg, int64_t bytes);

// "all_reduce", "AllReduce", "allreduce_", "_allgather_base" -> "allreduce", "allgather".
std::string CanonicalCollective(std::string_view text);

// The smallest power of 4 bytes >= bytes, formatted ("4KiB", "16MiB").
std::string SizeBucket(int64_t bytes);

// The name for time with nothing recorded on the training thread and the device idle, where no
// op of that thread marks its program point (summary/program_points.h names the others).
inline constexpr std::string_view kUnattributedPython = "(python, unattributed)";
// Not a function of the trace: a finding's name for the threads of a training process other than
// the one that runs the step (localize/cpu_contention.h, BlameBusyThreadsOfItsProcess).
inline constexpr std::string_view kOtherThreadsOfTheProcess = "(other threads of the training process)";
// A finding's name for a rank's extra work under a line of the job's code that only it runs
// (localize/own_code_line.h) where no host function's samples are at that line: its location
// says which.
inline constexpr std::string_view kCodeOnlyItRuns = "(code only this rank runs)";
// A finding's name for a rank's DataLoader worker processes where no loader op of its training
// thread names them (localize/cpu_contention.h, BlameBusyLoaderWorkers).
inline constexpr std::string_view kLoaderWorkerProcesses = "(DataLoader worker processes)";

// The entry a pattern folds a category's tail of small functions into: "(other host)". It is
// many functions, not one: never a finding's function, a lead, nor part of a role signature.
std::string FoldedTailName(Category category);
inline bool IsFoldedTail(std::string_view name) { return name.starts_with("(other "); }

// Python time named by the training thread's ops around it (summary/program_points.h). The same
// code may get another such name on another rank or run when the ops around it shift.
inline bool IsProgramPoint(std::string_view name) { return name.starts_with("(python "); }

// Time the training thread took to run again after a collective it waited on had ended (CPU
// training: the backend's thread ends the collective, then wakes the training thread):
// "(resuming after allreduce, before aten::mm)". On a node with more runnable threads than
// cores that is the time it was queued for a CPU, which moves from rank to rank and step to
// step; it is not code at a program point.
inline bool IsResumePoint(std::string_view name) { return name.starts_with("(resuming after "); }

// "f" -> "(f)", for prose; a name already in parentheses (a program point) stays as it is.
std::string InParentheses(const std::string& name);

}  // namespace eroica
