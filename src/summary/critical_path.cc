#include "summary/critical_path.h"

#include <algorithm>
#include <cstdint>

namespace eroica {
namespace {

// Timeline order: by start, and on equal starts the longer (outer) span first; ties keep the
// order spans came in.
inline bool BeforeInTimeline(const Span& x, const Span& y) {
  return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
}

// Spans in file order are ascending runs (one per thread or stream), merged as they are walked
// with no copy: up to this many by scanning their heads, more through a heap of them.
constexpr size_t kScannedRuns = 8;

// Cuts a layer's spans to the window, drops the empty ones, and returns where its ascending
// runs start (and, last, its size), in one pass. With no run structure to speak of, the spans
// are sorted into one run instead.
std::vector<size_t> CutToRuns(SpanList* spans, int64_t window_lo, int64_t window_hi) {
  std::vector<size_t> starts = {0};
  size_t kept = 0;
  for (Span span : *spans) {
    span.start_ns = std::max(span.start_ns, window_lo);
    span.end_ns = std::min(span.end_ns, window_hi);
    if (span.end_ns <= span.start_ns) continue;
    if (kept > 0 && BeforeInTimeline(span, (*spans)[kept - 1])) starts.push_back(kept);
    (*spans)[kept++] = span;
  }
  spans->resize(kept);
  starts.push_back(kept);
  if (starts.size() <= kept / 16 + 64) return starts;
  std::stable_sort(spans->begin(), spans->end(), BeforeInTimeline);
  return {0, kept};
}

// A layer's spans in timeline order, its runs merged as they are read, each cut to [lo, hi)
// (the order is the window's: see PaintRange). Spans empty once cut are skipped.
class TimelineOrder {
 public:
  TimelineOrder(const SpanList& spans, const std::vector<size_t>& run_starts, int64_t lo, int64_t hi)
      : spans_(spans),
        heads_(run_starts.begin(), run_starts.end() - 1),
        ends_(run_starts.begin() + 1, run_starts.end()),
        lo_(lo),
        hi_(hi) {
    if (heads_.size() <= kScannedRuns) return;
    for (size_t r = 0; r < heads_.size(); ++r) {
      if (heads_[r] < ends_[r]) heap_.push_back(r);
    }
    std::make_heap(heap_.begin(), heap_.end(), Later{this});
  }

  bool Next(Span* out) {
    while (true) {
      size_t run = FirstRun();
      if (run == heads_.size()) return false;
      Span span = spans_[heads_[run]];
      Consume(run);
      span.start_ns = std::max(span.start_ns, lo_);
      span.end_ns = std::min(span.end_ns, hi_);
      if (span.end_ns > span.start_ns) {
        *out = span;
        return true;
      }
    }
  }

 private:
  // Whether run a's head comes after run b's; on ties the later run, so the merge is stable.
  struct Later {
    const TimelineOrder* order;
    bool operator()(size_t a, size_t b) const {
      const Span& x = order->spans_[order->heads_[a]];
      const Span& y = order->spans_[order->heads_[b]];
      if (BeforeInTimeline(y, x)) return true;
      return !BeforeInTimeline(x, y) && a > b;
    }
  };

  // The run whose head comes first, or heads_.size() when every run is read.
  size_t FirstRun() const {
    if (heads_.size() > kScannedRuns) return heap_.empty() ? heads_.size() : heap_.front();
    size_t best = heads_.size();
    for (size_t r = 0; r < heads_.size(); ++r) {  // on ties the earlier run: the merge is stable
      if (heads_[r] < ends_[r] &&
          (best == heads_.size() || BeforeInTimeline(spans_[heads_[r]], spans_[heads_[best]]))) {
        best = r;
      }
    }
    return best;
  }

  void Consume(size_t run) {
    if (heads_.size() <= kScannedRuns) {
      ++heads_[run];
      return;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{this});  // `run` was on top: now last
    if (++heads_[run] < ends_[run]) {
      std::push_heap(heap_.begin(), heap_.end(), Later{this});
    } else {
      heap_.pop_back();
    }
  }

  const SpanList& spans_;
  std::vector<size_t> heads_, ends_;
  std::vector<size_t> heap_;  // runs not yet read, first head on top (more than kScannedRuns)
  int64_t lo_, hi_;
};

// One layer's own timeline, piece by piece, made as it is read (no layer's timeline is ever held
// whole). The innermost active span is the one that started last (on equal starts, the one that
// ends first: it comes later). Spans come in timeline order, so a stack holds them in priority
// order: its top, once the ended spans on it are popped, is the innermost. (A heap ordered by
// start gives the same top; the stack does it without the log factor.)
class LayerTimeline {
 public:
  explicit LayerTimeline(TimelineOrder order) : order_(std::move(order)) {
    more_ = order_.Next(&pending_);
    now_ = more_ ? pending_.start_ns : 0;
    has_next_ = NextPiece(&next_);
    Advance();
  }

  bool done() const { return done_; }
  // The current piece: where one function owns the layer, its neighbours owned by others.
  const Span& piece() const { return piece_; }
  void Advance() {
    done_ = !has_next_;
    if (done_) return;
    piece_ = next_;
    while ((has_next_ = NextPiece(&next_)) && next_.start_ns == piece_.end_ns && next_.function == piece_.function) {
      piece_.end_ns = next_.end_ns;
    }
  }

 private:
  bool NextPiece(Span* out) {
    while (more_ || !active_.empty()) {
      while (!active_.empty() && active_.back().end_ns <= now_) active_.pop_back();
      if (active_.empty()) {
        if (!more_) return false;
        now_ = std::max(now_, pending_.start_ns);
      }
      while (more_ && pending_.start_ns <= now_) {
        active_.push_back(pending_);
        more_ = order_.Next(&pending_);
      }
      while (!active_.empty() && active_.back().end_ns <= now_) active_.pop_back();
      if (active_.empty()) continue;
      int64_t until = active_.back().end_ns;
      if (more_) until = std::min(until, pending_.start_ns);
      *out = {now_, until, active_.back().function};
      now_ = until;
      return true;
    }
    return false;
  }

  TimelineOrder order_;
  std::vector<Span> active_;
  Span pending_, next_, piece_;
  bool more_ = false, has_next_ = false, done_ = true;
  int64_t now_ = 0;
};

// Paints [lo, hi) of a window [window_lo, window_hi) into `sink`, piece by piece in time order:
// spans are ordered by their bounds within the window, as when the whole window is painted, and
// only then cut to [lo, hi), so a slice names at every instant the owner the whole window's
// painting names.
template <typename Sink>
void PaintRange(std::vector<SpanList>* layers, int64_t window_lo, int64_t window_hi, int64_t lo, int64_t hi,
                uint32_t fill_function, Sink sink) {
  std::vector<LayerTimeline> timelines;  // the non-empty layers', highest priority first
  for (SpanList& layer : *layers) {
    if (layer.empty()) continue;  // most layers are, on any one trace
    std::vector<size_t> runs = CutToRuns(&layer, window_lo, window_hi);
    LayerTimeline timeline(TimelineOrder(layer, runs, lo, hi));
    if (!timeline.done()) timelines.push_back(std::move(timeline));
  }
  // One sweep over all timelines at once: at each instant the owner is the first timeline with
  // a piece there, and its piece lasts until it ends or a higher timeline's next piece starts.
  // (Lower timelines cannot cut it.)
  Span last = {lo, lo, fill_function};
  int64_t now = lo;
  while (now < hi) {
    int64_t until = hi;
    uint32_t function = fill_function;
    for (LayerTimeline& timeline : timelines) {
      while (!timeline.done() && timeline.piece().end_ns <= now) timeline.Advance();
      if (timeline.done()) continue;
      if (timeline.piece().start_ns <= now) {
        function = timeline.piece().function;
        until = std::min(until, timeline.piece().end_ns);
        break;
      }
      until = std::min(until, timeline.piece().start_ns);
    }
    if (function == last.function) {
      last.end_ns = until;
    } else {
      if (last.end_ns > last.start_ns) sink(last);
      last = {now, until, function};
    }
    now = until;
  }
  if (last.end_ns > last.start_ns) sink(last);
}

}  // namespace

SpanList InnermostTimeline(SpanList spans) {
  if (spans.empty()) return {};
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const Span& span : spans) {
    lo = std::min(lo, span.start_ns);
    hi = std::max(hi, span.end_ns);
  }
  std::vector<size_t> runs = CutToRuns(&spans, lo, hi);
  SpanList out;
  for (LayerTimeline timeline(TimelineOrder(spans, runs, lo, hi)); !timeline.done(); timeline.Advance()) {
    out.push_back(timeline.piece());
  }
  return out;
}

SpanList PaintCriticalPath(std::vector<SpanList> layers, int64_t window_start_ns, int64_t window_end_ns,
                           uint32_t fill_function) {
  SpanList out;
  PaintRange(&layers, window_start_ns, window_end_ns, window_start_ns, window_end_ns, fill_function,
             [&](const Span& span) { out.push_back(span); });
  return out;
}

CriticalPath PaintCriticalPathBySlices(size_t layer_count, const TimeSlices& slices, uint32_t fill_function,
                                       const GatherSlice& gather) {
  CriticalPath path(slices.start_ns);
  std::vector<SpanList> layers(layer_count);
  for (size_t k = 0; k < slices.count(); ++k) {
    int64_t lo = slices.Start(k), hi = slices.Start(k + 1);
    if (hi <= lo) continue;
    for (SpanList& layer : layers) layer.clear();
    gather(k, lo, hi, &layers);
    PaintRange(&layers, slices.start_ns, slices.end_ns, lo, hi, fill_function,
               [&](const Span& span) { path.Append(span); });
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
