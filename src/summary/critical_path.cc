#include "summary/critical_path.h"

#include <algorithm>

namespace eroica {
namespace {

inline void AppendMerged(SpanList* out, const Span& span) {
  if (span.end_ns <= span.start_ns) return;
  if (!out->empty() && out->back().end_ns == span.start_ns && out->back().function == span.function) {
    out->back().end_ns = span.end_ns;
  } else {
    out->push_back(span);
  }
}

// std::sort, but linear for what traces give: spans in file order are a few ascending runs
// (one per thread or stream, or per layer), merged here instead of sorted from scratch.
// `scratch` is the merges' second buffer, kept by the caller across calls: a fresh one each time
// cost more in first touches of its pages than the merging itself.
template <typename Less>
void SortRuns(SpanList* spans, Less less, SpanList* scratch) {
  std::vector<size_t> starts = {0};
  for (size_t i = 1; i < spans->size(); ++i) {
    if (less((*spans)[i], (*spans)[i - 1])) {
      starts.push_back(i);
      if (starts.size() > spans->size() / 16 + 64) {  // no run structure to speak of
        std::sort(spans->begin(), spans->end(), less);
        return;
      }
    }
  }
  starts.push_back(spans->size());
  if (starts.size() <= 2) return;
  // Merge neighbouring runs pairwise until one is left, between two buffers (inplace_merge
  // would allocate, and fault in, a fresh buffer each time).
  size_t size = spans->size();
  if (scratch->size() < size) scratch->resize(size);
  SpanList* from = spans;
  SpanList* to = scratch;
  while (starts.size() > 2) {
    std::vector<size_t> merged = {0};
    size_t r = 0;
    for (; r + 2 < starts.size(); r += 2) {
      std::merge(from->begin() + static_cast<long>(starts[r]), from->begin() + static_cast<long>(starts[r + 1]),
                 from->begin() + static_cast<long>(starts[r + 1]), from->begin() + static_cast<long>(starts[r + 2]),
                 to->begin() + static_cast<long>(starts[r]), less);
      merged.push_back(starts[r + 2]);
    }
    if (r + 1 < starts.size()) {  // an odd run left over: carried as it is
      std::copy(from->begin() + static_cast<long>(starts[r]), from->begin() + static_cast<long>(starts[r + 1]),
                to->begin() + static_cast<long>(starts[r]));
      merged.push_back(starts[r + 1]);
    }
    starts = std::move(merged);
    std::swap(from, to);
  }
  if (from != spans) {
    spans->swap(*from);
    spans->resize(size);  // the scratch may have been longer
  }
}

// Timeline order: by start, and on equal starts the longer (outer) span first; ties keep the
// order spans came in (SortRuns merges stably).
void SortForTimeline(SpanList* spans, SpanList* scratch) {
  std::erase_if(*spans, [](const Span& s) { return s.end_ns <= s.start_ns; });
  SortRuns(
      spans,
      [](const Span& x, const Span& y) {
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
      },
      scratch);
}

// The innermost active span is the one that started last (on equal starts, the one that ends
// first: it sorts later). Spans start in sorted order, so a stack holds them in priority order:
// its top, once the ended spans on it are popped, is the innermost. (A heap ordered by start
// gives the same top; the stack does it without the log factor.)
SpanList WalkTimeline(const SpanList& spans) {
  std::vector<size_t> active;
  SpanList out;
  out.reserve(2 * spans.size() + 1);  // each span adds at most two pieces: no regrowth copies
  size_t next = 0;
  int64_t now = spans.empty() ? 0 : spans[0].start_ns;
  while (next < spans.size() || !active.empty()) {
    while (!active.empty() && spans[active.back()].end_ns <= now) active.pop_back();
    if (active.empty()) {
      if (next >= spans.size()) break;
      now = std::max(now, spans[next].start_ns);
    }
    while (next < spans.size() && spans[next].start_ns <= now) active.push_back(next++);
    while (!active.empty() && spans[active.back()].end_ns <= now) active.pop_back();
    if (active.empty()) continue;
    const Span& top = spans[active.back()];
    int64_t until = top.end_ns;
    if (next < spans.size()) until = std::min(until, spans[next].start_ns);
    AppendMerged(&out, {now, until, top.function});
    now = until;
  }
  return out;
}

// Paints [lo, hi) of a window [window_lo, window_hi): spans are ordered by their bounds within
// the window, as when the whole window is painted, and only then cut to [lo, hi), so a slice
// names at every instant the owner the whole window's painting names.
SpanList PaintRange(std::vector<SpanList>* layers, int64_t window_lo, int64_t window_hi, int64_t lo, int64_t hi,
                    uint32_t fill_function, SpanList* scratch) {
  std::vector<SpanList> timelines;  // the non-empty layers' own timelines, highest priority first
  for (SpanList& layer : *layers) {
    for (Span& span : layer) {
      span.start_ns = std::max(span.start_ns, window_lo);
      span.end_ns = std::min(span.end_ns, window_hi);
    }
    SortForTimeline(&layer, scratch);
    if (lo > window_lo || hi < window_hi) {
      for (Span& span : layer) {
        span.start_ns = std::max(span.start_ns, lo);
        span.end_ns = std::min(span.end_ns, hi);
      }
      std::erase_if(layer, [](const Span& s) { return s.end_ns <= s.start_ns; });  // keeps the order
    }
    SpanList timeline = WalkTimeline(layer);
    if (!timeline.empty()) timelines.push_back(std::move(timeline));  // most layers are empty
  }
  // One sweep over all timelines at once: at each instant the owner is the first timeline with
  // a piece there, and its piece lasts until it ends or a higher timeline's next piece starts.
  // (Lower timelines cannot cut it.) The output comes out in time order, so nothing is sorted.
  SpanList out;
  size_t pieces = 1;
  for (const SpanList& timeline : timelines) pieces += timeline.size();
  out.reserve(pieces);  // what the timelines hold: rarely exceeded, since higher ones cover lower ones
  std::vector<size_t> next(timelines.size(), 0);
  int64_t now = lo;
  while (now < hi) {
    int64_t until = hi;
    uint32_t function = fill_function;
    for (size_t t = 0; t < timelines.size(); ++t) {
      const SpanList& timeline = timelines[t];
      size_t& i = next[t];
      while (i < timeline.size() && timeline[i].end_ns <= now) ++i;
      if (i == timeline.size()) continue;
      if (timeline[i].start_ns <= now) {
        function = timeline[i].function;
        until = std::min(until, timeline[i].end_ns);
        break;
      }
      until = std::min(until, timeline[i].start_ns);
    }
    AppendMerged(&out, {now, until, function});
    now = until;
  }
  return out;
}

}  // namespace

SpanList InnermostTimeline(SpanList spans) {
  SpanList scratch;
  SortForTimeline(&spans, &scratch);
  return WalkTimeline(spans);
}

SpanList PaintCriticalPath(std::vector<SpanList> layers, int64_t window_start_ns, int64_t window_end_ns,
                           uint32_t fill_function) {
  SpanList scratch;
  return PaintRange(&layers, window_start_ns, window_end_ns, window_start_ns, window_end_ns, fill_function, &scratch);
}

CriticalPath PaintCriticalPathBySlices(size_t layer_count, const TimeSlices& slices, uint32_t fill_function,
                                       const GatherSlice& gather) {
  CriticalPath path(slices.start_ns);
  std::vector<SpanList> layers(layer_count);
  SpanList scratch;
  for (size_t k = 0; k < slices.count(); ++k) {
    int64_t lo = slices.Start(k), hi = slices.Start(k + 1);
    if (hi <= lo) continue;
    for (SpanList& layer : layers) layer.clear();
    gather(k, lo, hi, &layers);
    for (const Span& span : PaintRange(&layers, slices.start_ns, slices.end_ns, lo, hi, fill_function, &scratch)) {
      path.Append(span);
    }
  }
  return path;
}

CriticalPath CriticalPath::FromSpans(const SpanList& spans) {
  CriticalPath path(spans.empty() ? 0 : spans.front().start_ns);
  for (const Span& span : spans) path.Append(span);
  return path;
}

void CriticalPath::Append(const Span& span) {
  if (span.end_ns <= end_ns_) return;
  auto length = static_cast<uint64_t>(span.end_ns - end_ns_);
  end_ns_ = span.end_ns;
  if (!pieces_.empty() && pieces_.back().function == span.function) {
    Piece& last = pieces_.back();
    if (last.length == kLongPiece) {
      long_lengths_.back() += static_cast<int64_t>(length);
      return;
    }
    length += last.length;
    pieces_.pop_back();
  }
  if (length >= kLongPiece) {
    pieces_.push_back({kLongPiece, span.function});
    long_lengths_.push_back(static_cast<int64_t>(length));
  } else {
    pieces_.push_back({static_cast<uint32_t>(length), span.function});
  }
}

SpanList CriticalPath::ToSpans() const {
  SpanList out;
  out.reserve(size());
  for (Span span : *this) out.push_back(span);
  return out;
}

}  // namespace eroica
