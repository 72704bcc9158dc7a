// The parse floor for section "bound" of BENCHMARKS.md: simdjson's on-demand API reading the
// name, ts and dur of every event. Built with -march=native when the compiler can (see
// CMakeLists.txt), so that simdjson's inline on-demand code uses this CPU's SIMD, as a
// simdjson built for the machine would.
#include <simdjson.h>

#include <string_view>

namespace eroica {

// Every event's name, ts and dur through simdjson's on-demand API: the parse floor.
size_t SimdjsonWalk(const char* data, size_t size, size_t capacity) {
  static simdjson::ondemand::parser parser;
  simdjson::padded_string_view json(data, size, capacity);
  size_t checksum = 0;
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc)) return 0;
  auto visit = [&](simdjson::ondemand::array events) {
    for (auto element : events) {
      simdjson::ondemand::object event;
      if (element.get_object().get(event)) continue;
      for (auto field : event) {
        std::string_view key = field.unescaped_key().value_unsafe();
        if (key == "name") {
          std::string_view name;
          if (!field.value().get_string().get(name)) checksum += name.size();
        } else if (key == "ts" || key == "dur") {
          checksum += field.value().raw_json_token().value_unsafe().size();
        }
      }
    }
  };
  simdjson::ondemand::array bare;
  if (!doc.get_array().get(bare)) {
    visit(bare);
    return checksum;
  }
  if (parser.iterate(json).get(doc)) return 0;
  simdjson::ondemand::object top;
  if (doc.get_object().get(top)) return 0;
  for (auto field : top) {
    std::string_view key = field.unescaped_key().value_unsafe();
    if (key != "traceEvents") continue;
    simdjson::ondemand::array events;
    if (!field.value().get_array().get(events)) visit(events);
    break;
  }
  return checksum;
}

}  // namespace eroica
