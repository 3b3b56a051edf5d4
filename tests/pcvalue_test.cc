// pcvalue decoding on hand-encoded tables, and Pclntab (from_parts) on a hand-built table with an
// inline tree, including corrupt ones.
#include "goref/binary/pcvalue.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "goref/binary/pclntab.h"

namespace goref::binary {
namespace {

using Buf = std::vector<std::byte>;

void put_uvarint(Buf& b, uint64_t v) {
  while (v >= 0x80) {
    b.push_back(static_cast<std::byte>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  b.push_back(static_cast<std::byte>(v));
}

uint32_t zigzag(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}

// Encodes (value, length-in-pc-units) runs as the Go linker does: each step is the value delta
// from the previous value (starting at -1) and the pc delta; a 0 byte ends the table.
Buf encode(const std::vector<std::pair<int32_t, uint32_t>>& runs, bool end_marker = true) {
  Buf b;
  int32_t prev = -1;
  for (auto [value, len] : runs) {
    put_uvarint(b, zigzag(value - prev));
    put_uvarint(b, len);
    prev = value;
  }
  if (end_marker) b.push_back(std::byte{0});
  return b;
}

TEST(PcValue, DecodesZigzagDeltasAndMultiByteVarints) {
  // Values 0, 8, -4, 100000 over pcs [0x1000,0x1004), [0x1004,0x1010), [0x1010,0x1011),
  // [0x1011, 0x1011+300).
  Buf t = encode({{0, 4}, {8, 12}, {-4, 1}, {100000, 300}});
  const uint64_t e = 0x1000;
  EXPECT_EQ(pcvalue(t, 0, e, e, 1), 0);
  EXPECT_EQ(pcvalue(t, 0, e, e + 3, 1), 0);
  EXPECT_EQ(pcvalue(t, 0, e, e + 4, 1), 8);
  EXPECT_EQ(pcvalue(t, 0, e, e + 15, 1), 8);
  EXPECT_EQ(pcvalue(t, 0, e, e + 16, 1), -4);
  EXPECT_EQ(pcvalue(t, 0, e, e + 17, 1), 100000);
  EXPECT_EQ(pcvalue(t, 0, e, e + 17 + 299, 1), 100000);
  // Past the last run (the end marker follows): not covered.
  EXPECT_EQ(pcvalue(t, 0, e, e + 17 + 300, 1), std::nullopt);
  // Before the entry.
  EXPECT_EQ(pcvalue(t, 0, e, e - 1, 1), std::nullopt);
}

TEST(PcValue, QuantumScalesPcDeltas) {
  Buf t = encode({{16, 2}, {32, 3}});  // arm64: quantum 4
  EXPECT_EQ(pcvalue(t, 0, 0x2000, 0x2007, 4), 16);
  EXPECT_EQ(pcvalue(t, 0, 0x2000, 0x2008, 4), 32);
  EXPECT_EQ(pcvalue(t, 0, 0x2000, 0x2013, 4), 32);
  EXPECT_EQ(pcvalue(t, 0, 0x2000, 0x2014, 4), std::nullopt);
}

TEST(PcValue, TableAtAnOffsetAndLimit) {
  Buf t = {std::byte{0xee}, std::byte{0xee}};
  Buf body = encode({{5, 10}, {6, 10}});
  t.insert(t.end(), body.begin(), body.end());
  EXPECT_EQ(pcvalue(t, 2, 100, 105, 1), 5);
  EXPECT_EQ(pcvalue(t, 2, 100, 115, 1), 6);
  // The function ends at 110: pcs from there on belong to another function.
  EXPECT_EQ(pcvalue(t, 2, 100, 109, 1, 110), 5);
  EXPECT_EQ(pcvalue(t, 2, 100, 112, 1, 110), std::nullopt);
}

TEST(PcValue, FirstStepMayHaveZeroDelta) {
  // The value delta 0 on the first step is a real step (value -1), not the end marker.
  Buf t = encode({{-1, 4}, {3, 4}});
  EXPECT_EQ(t[0], std::byte{0});
  EXPECT_EQ(pcvalue(t, 0, 0, 0, 1), -1);
  EXPECT_EQ(pcvalue(t, 0, 0, 5, 1), 3);
}

TEST(PcValue, TruncatedAndMalformedTablesStop) {
  Buf full = encode({{0, 4}, {8, 200}}, /*end_marker=*/false);
  // Cut inside the multi-byte pc delta of the second step.
  Buf cut(full.begin(), full.end() - 1);
  EXPECT_EQ(pcvalue(cut, 0, 0, 2, 1), 0);
  EXPECT_EQ(pcvalue(cut, 0, 0, 10, 1), std::nullopt);
  PcValueDecoder d(cut, 0, 0, 1);
  PcValueRun run;
  ASSERT_TRUE(d.next(run));
  EXPECT_FALSE(d.next(run));
  EXPECT_TRUE(d.corrupt());
  // No end marker: decoding ends at the end of the data.
  EXPECT_EQ(pcvalue(full, 0, 0, 203, 1), 8);
  EXPECT_EQ(pcvalue(full, 0, 0, 204, 1), std::nullopt);
  // An offset past the data, an empty table, and an overlong varint.
  EXPECT_EQ(pcvalue(full, 1000, 0, 0, 1), std::nullopt);
  EXPECT_EQ(pcvalue(Buf{}, 0, 0, 0, 1), std::nullopt);
  Buf overlong(12, std::byte{0xff});
  EXPECT_EQ(pcvalue(overlong, 0, 0, 0, 1), std::nullopt);
}

TEST(PcValue, ZeroPcDeltasTerminate) {
  // A long run of zero-length steps still ends at the end of the data.
  Buf t;
  for (int i = 0; i < 10000; ++i) {
    put_uvarint(t, zigzag(1));
    put_uvarint(t, 0);
  }
  EXPECT_EQ(pcvalue(t, 0, 0, 0, 1), std::nullopt);
  PcValueDecoder d(t, 0, 0, 1);
  PcValueRun run;
  int n = 0;
  while (d.next(run)) ++n;
  EXPECT_EQ(n, 10000);
}

// ---- a hand-built Go 1.20+ pclntab ----

template <class T>
void put(Buf& b, size_t off, T v) {
  if (b.size() < off + sizeof v) b.resize(off + sizeof v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

struct BuiltTable {
  Buf bytes;
  uint64_t addr = 0x500000, text = 0x401000, gofunc = 0;
};

// One function "main.outer" at text+0x100, 0x40 bytes long, with pcsp/pcfile/pcln tables, an
// InlTreeIndex pcdata table and an inline tree in go:func (inside the table here). The inline
// tree entries are given by the caller: {nameOff, parentPc} pairs.
BuiltTable build_table(const std::vector<std::pair<uint32_t, int32_t>>& inl,
                       const std::vector<std::pair<int32_t, uint32_t>>& inl_index_runs) {
  BuiltTable t;
  Buf funcnames;
  auto add_name = [&](const std::string& s) {
    auto off = static_cast<uint32_t>(funcnames.size());
    for (char c : s) funcnames.push_back(static_cast<std::byte>(c));
    funcnames.push_back(std::byte{0});
    return off;
  };
  uint32_t outer = add_name("main.outer");
  add_name("main.inner");   // nameOff 11
  add_name("main.deeper");  // nameOff 22
  Buf cutab;
  put<uint32_t>(cutab, 0, 0);   // file 0 -> filetab offset 0
  put<uint32_t>(cutab, 4, 10);  // file 1 -> "b.go"
  Buf filetab;
  for (char c : std::string("/src/a.go")) filetab.push_back(static_cast<std::byte>(c));
  filetab.push_back(std::byte{0});
  for (char c : std::string("b.go")) filetab.push_back(static_cast<std::byte>(c));
  filetab.push_back(std::byte{0});

  Buf pctab = {std::byte{0}};  // offset 0 means "no table"
  auto add_table = [&](const Buf& tb) {
    auto off = static_cast<uint32_t>(pctab.size());
    pctab.insert(pctab.end(), tb.begin(), tb.end());
    return off;
  };
  uint32_t pcsp = add_table(encode({{0, 4}, {24, 0x3c}}));
  uint32_t pcfile = add_table(encode({{0, 0x10}, {1, 0x30}}));
  uint32_t pcln = add_table(encode({{10, 0x10}, {20, 0x10}, {30, 0x20}}));
  uint32_t inlidx = add_table(encode(inl_index_runs));

  // pclntable: ftab (2 entries) then the _func, pcdata[3], funcdata[4].
  Buf pcln_table;
  put<uint32_t>(pcln_table, 0, 0x100);  // entryoff
  put<uint32_t>(pcln_table, 4, 16);     // funcoff
  put<uint32_t>(pcln_table, 8, 0x140);  // end
  put<uint32_t>(pcln_table, 12, 0);
  const size_t f = 16;
  put<uint32_t>(pcln_table, f + 0, 0x100);
  put<int32_t>(pcln_table, f + 4, static_cast<int32_t>(outer));
  put<int32_t>(pcln_table, f + 8, 16);
  put<uint32_t>(pcln_table, f + 16, pcsp);
  put<uint32_t>(pcln_table, f + 20, pcfile);
  put<uint32_t>(pcln_table, f + 24, pcln);
  put<uint32_t>(pcln_table, f + 28, 3);  // npcdata
  put<uint32_t>(pcln_table, f + 32, 0);  // cuOffset
  put<int32_t>(pcln_table, f + 36, 9);   // startLine
  put<uint8_t>(pcln_table, f + 43, 4);   // nfuncdata
  put<uint32_t>(pcln_table, f + 44, 0);
  put<uint32_t>(pcln_table, f + 48, 0);
  put<uint32_t>(pcln_table, f + 52, inlidx);
  put<uint32_t>(pcln_table, f + 56, UINT32_MAX);  // funcdata 0..2 absent
  put<uint32_t>(pcln_table, f + 60, UINT32_MAX);
  put<uint32_t>(pcln_table, f + 64, UINT32_MAX);
  put<uint32_t>(pcln_table, f + 68, 0);  // FUNCDATA_InlTree at gofunc+0

  // Assemble: header, funcnametab, cutab, filetab, pctab, pclntable, then go:func (the tree).
  Buf& b = t.bytes;
  b.resize(72);
  put<uint32_t>(b, 0, kGo120PclntabMagic);
  put<uint8_t>(b, 6, 1);
  put<uint8_t>(b, 7, 8);
  put<uint64_t>(b, 8, 1);  // nfunc
  uint64_t off = 72;
  auto append = [&](const Buf& part, size_t header_slot) {
    put<uint64_t>(b, header_slot, off);
    b.insert(b.end(), part.begin(), part.end());
    off += part.size();
  };
  append(funcnames, 32);
  append(cutab, 40);
  append(filetab, 48);
  append(pctab, 56);
  append(pcln_table, 64);
  while (b.size() % 8) b.push_back(std::byte{0});
  t.gofunc = t.addr + b.size();
  for (auto [name_off, parent_pc] : inl) {
    size_t at = b.size();
    b.resize(at + 16);
    put<uint32_t>(b, at + 4, name_off);
    put<int32_t>(b, at + 8, parent_pc);
  }
  return t;
}

TEST(Pclntab, FromPartsFindsAndDescribesTheFunction) {
  auto t = build_table({{11, 0x20}}, {{-1, 0x10}, {0, 0x10}, {-1, 0x20}});
  auto tab = Pclntab::from_parts(t.bytes, t.addr, t.text, t.gofunc);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  EXPECT_EQ(tab->nfunc(), 1u);
  EXPECT_FALSE(tab->find_func(0x4010ff));
  EXPECT_FALSE(tab->find_func(0x401140));
  auto f = tab->find_func(0x401120);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->entry(), 0x401100u);
  EXPECT_EQ(f->end(), 0x401140u);
  EXPECT_EQ(f->name(), "main.outer");
  EXPECT_EQ(f->start_line(), 9);
  EXPECT_EQ(f->args(), 16);
  EXPECT_EQ(f->pcsp_at(0x401100), 0);
  EXPECT_EQ(f->pcsp_at(0x401104), 24);
  EXPECT_EQ(f->file_at(0x401100), "/src/a.go");
  EXPECT_EQ(f->file_at(0x401110), "b.go");
  EXPECT_EQ(f->line_at(0x401125), 30);
  EXPECT_EQ(f->pcdata_at(kPcdataUnsafePoint, 0x401100), -1);  // no table
  EXPECT_EQ(f->pcdata_at(7, 0x401100), -1);                   // beyond npcdata
  EXPECT_EQ(f->funcdata(kFuncdataInlTree), t.gofunc);
  EXPECT_EQ(f->funcdata(kFuncdataArgsPointerMaps), std::nullopt);
  EXPECT_EQ(f->funcdata(9), std::nullopt);
}

TEST(Pclntab, SymbolizeExpandsTheInlineTree) {
  // pcs [0x110,0x120) are main.inner inlined into main.outer at parentPc 0x20 (line 30).
  auto t = build_table({{11, 0x20}}, {{-1, 0x10}, {0, 0x10}, {-1, 0x20}});
  auto tab = Pclntab::from_parts(t.bytes, t.addr, t.text, t.gofunc);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  auto fr = tab->symbolize(0x401115);
  ASSERT_EQ(fr.size(), 2u);
  EXPECT_EQ(fr[0].function, "main.inner");
  EXPECT_TRUE(fr[0].inlined);
  EXPECT_EQ(fr[0].file, "b.go");
  EXPECT_EQ(fr[0].line, 20);
  EXPECT_EQ(fr[0].entry, 0x401100u);
  EXPECT_EQ(fr[1].function, "main.outer");
  EXPECT_FALSE(fr[1].inlined);
  EXPECT_EQ(fr[1].line, 30);
  auto plain = tab->symbolize(0x401105);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].function, "main.outer");
  EXPECT_EQ(plain[0].file, "/src/a.go");
  EXPECT_EQ(plain[0].line, 10);
  EXPECT_TRUE(tab->symbolize(0x400000).empty());
}

TEST(Pclntab, InlineTreeCycleTerminates) {
  // Entry 0's parent pc is inside entry 1's range and entry 1's parent is back in entry 0's.
  auto t = build_table({{11, 0x28}, {22, 0x12}}, {{-1, 0x10}, {0, 0x10}, {1, 0x20}});
  auto tab = Pclntab::from_parts(t.bytes, t.addr, t.text, t.gofunc);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  auto fr = tab->symbolize(0x401112);
  ASSERT_EQ(fr.size(), 3u);  // inner, deeper, then the physical frame once the cycle is seen
  EXPECT_EQ(fr[0].function, "main.inner");
  EXPECT_EQ(fr[1].function, "main.deeper");
  EXPECT_EQ(fr[2].function, "main.outer");
  EXPECT_FALSE(fr[2].inlined);
}

TEST(Pclntab, InlineTreeOutOfBoundsAndBadParentTerminate) {
  // Index 5 is far past the end of the data; the tree cannot be read.
  auto t = build_table({{11, 0x20}}, {{-1, 0x10}, {5, 0x30}});
  auto tab = Pclntab::from_parts(t.bytes, t.addr, t.text, t.gofunc);
  ASSERT_TRUE(tab.ok()) << tab.error().message();
  auto fr = tab->symbolize(0x401112);
  ASSERT_EQ(fr.size(), 1u);
  EXPECT_EQ(fr[0].function, "main.outer");
  // A parent pc outside the function.
  auto t2 = build_table({{11, 0x4000}}, {{-1, 0x10}, {0, 0x30}});
  auto tab2 = Pclntab::from_parts(t2.bytes, t2.addr, t2.text, t2.gofunc);
  ASSERT_TRUE(tab2.ok());
  auto fr2 = tab2->symbolize(0x401112);
  ASSERT_EQ(fr2.size(), 2u);
  EXPECT_EQ(fr2[0].function, "main.inner");
  EXPECT_EQ(fr2[1].function, "main.outer");
}

TEST(Pclntab, RejectsCorruptHeaders) {
  auto t = build_table({}, {{-1, 0x40}});
  {
    Buf b = t.bytes;
    put<uint32_t>(b, 0, 0xfffffff0);
    auto r = Pclntab::from_parts(b, t.addr, t.text, t.gofunc);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), Errc::kUnsupported);
    EXPECT_NE(r.error().message().find("0xfffffff0"), std::string::npos);
  }
  {
    Buf b = t.bytes;
    put<uint64_t>(b, 8, 1u << 30);  // nfunc far beyond the table
    auto r = Pclntab::from_parts(b, t.addr, t.text, t.gofunc);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), Errc::kBadFormat);
  }
  {
    Buf b = t.bytes;
    put<uint64_t>(b, 64, b.size() + 100);  // pclnOffset past the end
    EXPECT_FALSE(Pclntab::from_parts(b, t.addr, t.text, t.gofunc).ok());
  }
  for (size_t cut = 0; cut < t.bytes.size(); cut += 7) {
    Buf b(t.bytes.begin(), t.bytes.begin() + static_cast<ptrdiff_t>(cut));
    auto r = Pclntab::from_parts(b, t.addr, t.text, t.gofunc);
    if (r.ok()) (void)r->symbolize(0x401115);  // may survive a cut in go:func; must not crash
  }
}

}  // namespace
}  // namespace goref::binary
