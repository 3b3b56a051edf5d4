// Pointer metadata and object lookup on hand-made spans: the span-end bitmap (Go 1.22+), its
// shift under Green Tea's inline mark bits, Go 1.21's arena bitmap, and findObject's rules
// (interior pointers, free slots, addresses past the last object).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "goref/runtime/heap_bits.h"
#include "goref/runtime/heap_snapshot.h"
#include "goref/scan/marker.h"

namespace goref::runtime {
namespace {

constexpr uint64_t kPage = 8192;
constexpr uint64_t kArenaBase = 0xc000000000;  // an arena-aligned address

// A snapshot with one one-page span of 32-byte objects at kArenaBase.
struct OneSpan {
  HeapSnapshot s;
  std::vector<std::byte> mem = std::vector<std::byte>(kPage);

  explicit OneSpan(bool green_tea, bool arena_bitmap = false) {
    auto& L = s.layout;
    L.page_size = kPage;
    L.heap_arena_bytes = 64 << 20;
    L.arena_base_offset = 0;
    if (!arena_bitmap) L.min_size_for_malloc_header = 512;
    L.inline_mark_bits_size = 128;
    Span sp;
    sp.base = kArenaBase;
    sp.npages = 1;
    sp.elemsize = 32;
    sp.spanclass = 3 << 1;  // size class 3, scan
    sp.inline_mark_bits = green_tea;
    uint64_t usable = kPage - (arena_bitmap ? 0 : 128) - (green_tea ? 128 : 0);
    sp.nelems = static_cast<uint32_t>(usable / 32);
    sp.limit = sp.base + uint64_t{sp.nelems} * 32;
    sp.freeindex = 4;  // slots 0-3 allocated; others by alloc bits
    sp.alloc_bits.assign((sp.nelems + 7) / 8, 0);
    sp.alloc_bits[0] = 1 << 6;  // slot 6
    sp.div_mul = ~uint32_t{0} / 32 + 1;
    sp.mem = mem.data();
    s.spans.push_back(std::move(sp));
    auto& pt = s.pages[(kArenaBase >> 26)];
    pt.assign(8192, 0);
    pt[(kArenaBase / kPage) % 8192] = 1;
  }
  // Sets the span-end heap bit of the word at address a.
  void set_span_bit(uint64_t a) {
    const auto& sp = s.spans[0];
    uint64_t off = kPage - kPage / 64 - (sp.inline_mark_bits ? 128 : 0);
    uint64_t i = (a - sp.base) / 8;
    mem[off + i / 8] |= std::byte(1u << (i % 8));
  }
};

std::vector<uint64_t> pointers(const HeapSnapshot& s, uint64_t base) {
  std::vector<uint64_t> out;
  HeapBits bits(s, nullptr);  // span-end and arena bitmaps never consult type masks
  auto r = bits.for_each_pointer(s.spans[0], base, [&](uint64_t w) { out.push_back(w); });
  EXPECT_TRUE(r.ok());
  return out;
}

TEST(HeapBits, SpanEndBitmap) {
  OneSpan h(/*green_tea=*/false);
  h.set_span_bit(kArenaBase + 32 + 8);   // object 1, word 1
  h.set_span_bit(kArenaBase + 64 + 24);  // object 2, word 3
  EXPECT_EQ(pointers(h.s, kArenaBase), std::vector<uint64_t>{});
  EXPECT_EQ(pointers(h.s, kArenaBase + 32), std::vector<uint64_t>{1});
  EXPECT_EQ(pointers(h.s, kArenaBase + 64), std::vector<uint64_t>{3});
}

TEST(HeapBits, GreenTeaMovesTheBitmapDown) {
  OneSpan h(/*green_tea=*/true);
  h.set_span_bit(kArenaBase + 32 + 16);
  EXPECT_EQ(pointers(h.s, kArenaBase + 32), std::vector<uint64_t>{2});
  // The same bit where the bitmap would be without inline mark bits is not read.
  OneSpan plain(/*green_tea=*/false);
  plain.mem = h.mem;
  plain.s.spans[0].mem = plain.mem.data();
  EXPECT_EQ(pointers(plain.s, kArenaBase + 32), std::vector<uint64_t>{});
}

TEST(HeapBits, Go121ArenaBitmap) {
  OneSpan h(/*green_tea=*/false, /*arena_bitmap=*/true);
  auto& bm = h.s.arena_bitmaps[kArenaBase >> 26];
  bm.assign((64 << 20) / 64, 0);
  uint64_t w = (kArenaBase % (64 << 20)) / 8 + 4 + 2;  // object 1 (words 4..7), word 2
  bm[w / 8] |= uint8_t(1u << (w % 8));
  EXPECT_EQ(pointers(h.s, kArenaBase + 32), std::vector<uint64_t>{2});
  EXPECT_EQ(pointers(h.s, kArenaBase), std::vector<uint64_t>{});
}

TEST(HeapBits, NoscanSpanHasNoPointers) {
  OneSpan h(/*green_tea=*/false);
  h.s.spans[0].spanclass |= 1;
  h.set_span_bit(kArenaBase + 8);
  EXPECT_EQ(pointers(h.s, kArenaBase), std::vector<uint64_t>{});
}

TEST(Marker, FindsAllocatedObjectsOnly) {
  OneSpan h(/*green_tea=*/false);
  HeapBits bits(h.s, nullptr);
  scan::RefTree tree;
  scan::Marker m(h.s, bits, tree);
  auto o = m.find(kArenaBase + 32 + 5);  // interior pointer into slot 1
  ASSERT_TRUE(o);
  EXPECT_EQ(o->base, kArenaBase + 32);
  EXPECT_EQ(o->slot, 1u);
  EXPECT_TRUE(m.find(kArenaBase + 6 * 32));   // slot 6: set in allocBits
  EXPECT_FALSE(m.find(kArenaBase + 5 * 32));  // slot 5: free
  EXPECT_FALSE(m.find(h.s.spans[0].limit));   // past the last object (the bitmap)
  EXPECT_FALSE(m.find(kArenaBase + kPage));   // no span there
  EXPECT_FALSE(m.find(0x1000));               // not heap
  auto n = tree.root("r");
  EXPECT_TRUE(m.mark(*o, n));
  EXPECT_FALSE(m.mark(*o, n));  // once
  EXPECT_EQ(tree.nodes()[n].bytes, 32u);
}

TEST(Marker, MarksThroughPointersAndChargesOnce) {
  OneSpan h(/*green_tea=*/false);
  // Object 0 points to object 1 (word 0), object 1 to object 2 and back to object 0.
  auto put = [&](uint64_t a, uint64_t v) { std::memcpy(h.mem.data() + (a - kArenaBase), &v, 8); };
  put(kArenaBase, kArenaBase + 32);
  h.set_span_bit(kArenaBase);
  put(kArenaBase + 32, kArenaBase + 64 + 8);  // interior
  h.set_span_bit(kArenaBase + 32);
  put(kArenaBase + 40, kArenaBase);
  h.set_span_bit(kArenaBase + 40);
  HeapBits bits(h.s, nullptr);
  scan::RefTree tree;
  scan::Marker m(h.s, bits, tree);
  auto a = tree.root("a"), b = tree.root("b");
  m.mark_from(kArenaBase, a);
  m.mark_from(kArenaBase + 64, b);  // already reached through a
  EXPECT_EQ(tree.nodes()[a].objects, 3u);
  EXPECT_EQ(tree.nodes()[a].bytes, 96u);
  EXPECT_EQ(tree.nodes()[b].objects, 0u);
  EXPECT_EQ(m.stats().objects, 3u);
}

}  // namespace
}  // namespace goref::runtime
