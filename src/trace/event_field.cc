#include "trace/event_field.h"

namespace eroica {

Field TopLevelField(std::string_view key) {
  if (key.empty()) return Field::kSkip;
  switch (key[0]) {
    case 'a':
      return key == "args" ? Field::kArgs : Field::kSkip;
    case 'c':
      return key == "cat" ? Field::kCat : Field::kSkip;
    case 'd':
      return key == "dur" ? Field::kDur : Field::kSkip;
    case 'n':
      return key == "name" ? Field::kName : Field::kSkip;
    case 'p':
      if (key == "ph") return Field::kPhase;
      return key == "pid" ? Field::kPid : Field::kSkip;
    case 't':
      if (key == "ts") return Field::kTs;
      return key == "tid" ? Field::kTid : Field::kSkip;
    default:
      return Field::kSkip;
  }
}

Field ArgsField(std::string_view key) {
  if (key == "correlation") return Field::kCorrelation;
  if (key == "bytes") return Field::kBytes;
  if (key == "In msg nelems") return Field::kInMsgNelems;
  if (key == "Input Dims") return Field::kInputDims;
  if (key == "Collective name") return Field::kCollective;
  if (key == "dtype") return Field::kDtype;
  return Field::kSkip;
}

int DtypeBytes(std::string_view dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float32" || dtype == "int32") return 4;
  if (dtype == "BFloat16" || dtype == "Half" || dtype == "Short") return 2;
  if (dtype == "Double" || dtype == "Long" || dtype == "ComplexFloat") return 8;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype.starts_with("Float8")) return 1;
  return 0;
}

}  // namespace eroica
