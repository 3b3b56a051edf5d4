// The amd64 check recogniser on hand-assembled code: every bound-check shape the Go compiler
// emits (taken failure, fall-through JMP, a compare shared with a signed condition, flags from
// another block, NOP padding, Go 1.26's bare panicBounds call), the nil-check probe in each
// ModRM/SIB encoding, and the look-alikes that are not checks (the stack check, the divide
// check, probes with a displacement or an index, a foreign instruction in the fail block).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "goref/annotate/check_sites.h"

namespace goref::annotate {
namespace {

constexpr uint64_t kBase = 0x401000;
constexpr uint64_t kPanicIndex = 0x500000;  // a bounds-panic function
constexpr uint64_t kMorestack = 0x500100;   // not one
constexpr uint64_t kPanicDivide = 0x500200;

// A tiny assembler: raw bytes, labels, and rel8/rel32 branches patched when the code is done.
class Asm {
 public:
  uint64_t here() const { return kBase + b_.size(); }
  Asm& raw(std::initializer_list<int> bytes) {
    for (int x : bytes) b_.push_back(std::byte(x));
    return *this;
  }
  Asm& label(const std::string& name) {
    labels_[name] = here();
    return *this;
  }
  // Jcc rel8 (opcode 0x70+cc) or JMP rel8 (0xeb) to a label.
  Asm& jump8(int opcode, const std::string& to) {
    raw({opcode, 0});
    fixups_.push_back({b_.size() - 1, to});
    return *this;
  }
  Asm& call(uint64_t target) {
    uint64_t next = here() + 5;
    auto rel = int32_t(int64_t(target) - int64_t(next));
    raw({0xe8});
    for (int i = 0; i < 4; ++i) b_.push_back(std::byte((uint32_t(rel) >> (8 * i)) & 0xff));
    return *this;
  }
  uint64_t at(const std::string& name) const { return labels_.at(name); }
  std::vector<std::byte> done() {
    for (auto& [pos, name] : fixups_) {
      int64_t rel = int64_t(labels_.at(name)) - int64_t(kBase + pos + 1);
      EXPECT_TRUE(rel >= -128 && rel < 128) << name;
      b_[pos] = std::byte(uint8_t(int8_t(rel)));
    }
    return b_;
  }

 private:
  std::vector<std::byte> b_;
  std::map<std::string, uint64_t> labels_;
  std::vector<std::pair<size_t, std::string>> fixups_;
};

// Opcodes of the short conditional jumps.
constexpr int kJB = 0x72, kJAE = 0x73, kJE = 0x74, kJBE = 0x76, kJA = 0x77, kJL = 0x7c;
constexpr int kJLE = 0x7e, kJMP = 0xeb;

std::vector<CheckSite> sites(std::vector<std::byte> code) {
  std::vector<uint64_t> panics = {kPanicIndex};
  auto r = find_check_sites(target::Arch::kAmd64, code, kBase, panics);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->sites : std::vector<CheckSite>{};
}

// The fail block as Go <= 1.25 lays it out: argument moves, then the call.
void fail_block(Asm& a, uint64_t target = kPanicIndex) {
  a.label("fail").raw({0x48, 0x89, 0xf8});  // MOVQ DI, AX
  a.raw({0x48, 0x89, 0xd9});                // MOVQ BX, CX
  a.call(target).raw({0x90});               // CALL; NOPL
}

TEST(CheckSites, TakenFailureWithPadding) {
  Asm a;
  a.raw({0x55});                                      // PUSHQ BP
  a.label("pad").raw({0x0f, 0x1f, 0x40, 0x00});       // NOPL 0(AX)
  a.label("cmp").raw({0x48, 0x39, 0xfb});             // CMPQ BX, DI (cmp rbx, rdi)
  a.label("jcc").jump8(kJAE, "fail");                 // JAE fail
  a.raw({0x48, 0x8b, 0x04, 0xd8}).raw({0x5d, 0xc3});  // MOVQ (AX)(BX*8), AX; POPQ BP; RET
  fail_block(a);
  auto s = sites(a.done());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, CheckKind::kBounds);
  EXPECT_EQ(s[0].pc, a.at("cmp"));
  EXPECT_EQ(s[0].branch, a.at("jcc"));
  EXPECT_EQ(s[0].begin, a.at("pad"));
  EXPECT_EQ(s[0].end, a.at("jcc") + 2);
}

TEST(CheckSites, EveryUnsignedJumpAndTheGo126Call) {
  for (int jcc : {kJB, kJBE, kJAE, kJA}) {
    Asm a;
    a.label("cmp").raw({0x48, 0x83, 0xfb, 0x08});  // CMPQ BX, $8
    a.jump8(jcc, "fail").raw({0xc3});
    // Go 1.26+: an optional constant move, then runtime.panicBounds (here the same address).
    a.label("fail").raw({0xb8, 0x20, 0x03, 0x00, 0x00});  // MOVL $0x320, AX
    a.call(kPanicIndex);
    auto s = sites(a.done());
    ASSERT_EQ(s.size(), 1u) << jcc;
    EXPECT_EQ(s[0].pc, a.at("cmp"));
  }
}

TEST(CheckSites, LoopShapeFallsThroughToJmp) {
  Asm a;
  a.label("body").raw({0x48, 0xff, 0xc1});  // INCQ CX
  a.raw({0x4c, 0x8b, 0x04, 0xcf});          // MOVQ (DI)(CX*8), R8
  a.label("cmp").raw({0x4c, 0x39, 0xc3});   // CMPQ BX, R8
  a.label("jcc").jump8(kJA, "body");        // JA body: in bounds, loop on
  a.jump8(kJMP, "fail");                    // JMP fail
  a.raw({0xcc, 0xcc});                      // INT3 padding
  fail_block(a);
  auto s = sites(a.done());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pc, a.at("cmp"));
  EXPECT_EQ(s[0].branch, a.at("jcc"));
}

TEST(CheckSites, CompareSharedWithASignedCondition) {
  // CMPQ BX, R8; JL x; NOPW; JB fail — the compiler reuses one compare's flags.
  Asm a;
  a.label("cmp").raw({0x4c, 0x39, 0xc3});
  a.jump8(kJL, "x").raw({0x66, 0x90});
  a.label("jcc").jump8(kJB, "fail");
  a.label("x").raw({0xc3});
  fail_block(a);
  auto s = sites(a.done());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pc, a.at("cmp"));
  EXPECT_EQ(s[0].branch, a.at("jcc"));
  EXPECT_EQ(s[0].end, a.at("jcc") + 2);
}

TEST(CheckSites, FlagsFromAnotherBlock) {
  // A block that starts with the check's jump: its compare is elsewhere.
  Asm a;
  a.raw({0x48, 0x39, 0xd7}).jump8(kJLE, "blk").raw({0xc3});  // CMPQ DI, DX; JLE blk; RET
  a.label("blk").jump8(kJBE, "fail").raw({0xc3});
  fail_block(a);
  auto s = sites(a.done());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pc, a.at("blk"));
  EXPECT_EQ(s[0].begin, a.at("blk"));
}

TEST(CheckSites, LookAlikesAreNotChecks) {
  Asm a;
  // The stack check: CMPQ SP, 16(R14); JBE → runtime.morestack.
  a.raw({0x49, 0x3b, 0x66, 0x10}).jump8(kJBE, "more");
  // The divide check: TESTQ BX, BX; JE → runtime.panicdivide.
  a.raw({0x48, 0x85, 0xdb}).jump8(kJE, "div");
  // A compare whose fail block does real work before the panic call: not a check shape.
  a.raw({0x48, 0x39, 0xfb}).jump8(kJAE, "work").raw({0xc3});
  a.label("more").call(kMorestack);
  a.label("div").call(kPanicDivide);
  a.label("work").raw({0x48, 0x01, 0xd8});  // ADDQ BX, AX
  a.call(kPanicIndex);
  EXPECT_TRUE(sites(a.done()).empty());
}

TEST(CheckSites, PanicCallsAreCountedAndMatched) {
  Asm a;
  a.raw({0x48, 0x39, 0xfb}).jump8(kJAE, "fail").raw({0xc3});
  fail_block(a);
  a.call(kPanicIndex);  // a second call nothing jumps to
  auto code = a.done();
  std::vector<uint64_t> panics = {kPanicIndex};
  auto r = find_check_sites(target::Arch::kAmd64, code, kBase, panics);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->sites.size(), 1u);
  EXPECT_EQ(r->panic_calls, 2u);
  EXPECT_EQ(r->panic_calls_reached, 1u);
}

TEST(CheckSites, NilProbeEncodings) {
  struct Case {
    std::vector<int> bytes;
    bool nil;
    const char* what;
  };
  std::vector<Case> cases = {
      {{0x84, 0x00}, true, "test [rax], al"},
      {{0x41, 0x84, 0x00}, true, "test [r8], al (REX.B)"},
      {{0x84, 0x04, 0x24}, true, "test [rsp], al (SIB)"},
      {{0x84, 0x45, 0x00}, true, "test [rbp+0], al (disp8 zero)"},
      {{0x41, 0x84, 0x45, 0x00}, true, "test [r13+0], al"},
      {{0x84, 0x40, 0x08}, false, "test [rax+8], al"},
      {{0x84, 0x04, 0x18}, false, "test [rax+rbx], al"},
      {{0x84, 0xc0}, false, "test al, al"},
      {{0x85, 0x00}, false, "test [rax], eax"},
      {{0x84, 0x08}, false, "test [rax], cl"},
      {{0x64, 0x84, 0x00}, false, "test fs:[rax], al"},
  };
  for (const auto& c : cases) {
    Asm a;
    a.raw({0x90});
    for (int x : c.bytes) a.raw({x});
    a.raw({0xc3});
    auto s = sites(a.done());
    ASSERT_EQ(s.size(), c.nil ? 1u : 0u) << c.what;
    if (c.nil) {
      EXPECT_EQ(s[0].kind, CheckKind::kNil) << c.what;
      EXPECT_EQ(s[0].pc, kBase + 1) << c.what;
      EXPECT_EQ(s[0].end, kBase + 1 + c.bytes.size()) << c.what;
    }
  }
}

TEST(CheckSites, GarbageNeverCrashesOrLoops) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> panics = {kBase + 100, kBase + 1000};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::byte> code(1 + rng() % 4096);
    for (auto& b : code) b = std::byte(rng() & 0xff);
    auto r = find_check_sites(target::Arch::kAmd64, code, kBase, panics);
    ASSERT_TRUE(r.ok());
    uint64_t prev_end = 0;
    for (const auto& s : r->sites) {
      EXPECT_LE(prev_end, s.begin);
      EXPECT_LT(s.begin, s.end);
      EXPECT_LE(s.end, kBase + code.size());
      prev_end = s.end;
    }
  }
  // A compare truncated at the end of the code.
  std::vector<std::byte> cut = {std::byte(0x48), std::byte(0x39)};
  EXPECT_TRUE(find_check_sites(target::Arch::kAmd64, cut, kBase, panics).ok());
}

TEST(CheckSites, Arm64IsRefusedClearly) {
  std::vector<std::byte> code(8);
  auto r = find_check_sites(target::Arch::kArm64, code, kBase, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Errc::kUnsupported);
  EXPECT_NE(r.error().message().find("amd64 only"), std::string::npos);
}

TEST(CheckSites, BoundsPanicFunctionNames) {
  for (const char* n : {"runtime.panicIndex", "runtime.panicIndexU", "runtime.panicSliceAlen",
                        "runtime.panicSliceAcapU", "runtime.panicSliceB", "runtime.panicSlice3Alen",
                        "runtime.panicSlice3C", "runtime.panicSlice3CU",
                        "runtime.panicSliceConvert", "runtime.panicBounds", "runtime.goPanicIndex",
                        "runtime.goPanicSlice3BU", "runtime.panicExtendIndex"})
    EXPECT_TRUE(is_bounds_panic_function(n)) << n;
  for (const char* n : {"runtime.panicdivide", "runtime.panicshift", "runtime.morestack_noctxt",
                        "runtime.panicmem", "main.panicIndex", "runtime.panicIndexUU",
                        "runtime.panic", "runtime.gopanic", "runtime.panicSliceConvertU"})
    EXPECT_FALSE(is_bounds_panic_function(n)) << n;
}

}  // namespace
}  // namespace goref::annotate
