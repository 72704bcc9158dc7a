// How a one-shot eroica process asks glibc to keep freed memory, and to back its heap with
// transparent huge pages.
//
// Kept: reading a trace frees its read buffer and the parser's scratch just before summarize
// allocates its per-event arrays and the critical path's layers. With glibc's defaults each of
// those blocks is a fresh mapping whose pages fault in one by one, and freed ones go back to the
// kernel. Kept in the heap, freed pages are reused without a fault: about 125 fewer per trace
// and reads of 25-56 MB traces 1.04-1.07x as fast on a 2-core VM; peak RSS unchanged (149 MB for
// the 1.19 GB trace either way). Blocks of 64 MB and more are still mapped (and the events array
// maps its own pages, `huge_page_allocator.h`). What a process keeps is at most what it once
// held, so the long-running agent, which holds little, keeps little.
//
// Huge pages: even reused, the heap's pages are faulted in once, 4 KB at a time, and on a VM a
// fault costs far more than zeroing the page (on the 2-core AMD test VM: 13 us a 4 KB page
// touched first, 1.1 us a 4 KB share of a 2 MB huge page). The heap's next 48 MB are advised
// to use huge pages: a fresh read + summarize of the 26 MB rank0.json then took 216 page faults
// instead of 841 (about 110 of them the loader's) and ran 1.49x as fast per core (best of 10
// interleaved fresh runs; 1.20-1.56x on the five largest real traces); its peak RSS grew from
// 15.0 to 18.6 MB (a touched huge page is resident whole). Diagnose of 100,000 synthetic
// workers (573 MB of RSS, most of its heap beyond the 48 MB) took 1.04-1.05x the CPU time in
// interleaved runs, within their spread. The node agent's RSS 8 s after its start: 7.7 MB
// against 5.7 (one huge page).
#pragma once

namespace eroica {

// Call first thing in main(). Returns whether the heap's next 48 MB were advised to use huge
// pages: false under another allocator (a sanitizer's, a preloaded one) or if glibc's heap is
// not laid out as this expects; the process then runs as before.
bool KeepFreedMemoryForReuse();

}  // namespace eroica
