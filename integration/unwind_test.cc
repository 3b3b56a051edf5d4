// The unwinders against real Go stacks: every Go version × {default, pie, noopt}. The deepstack
// fixture parks goroutines at known depths and prints, from inside each, the frames the runtime
// itself reports (runtime.Callers / CallersFrames) just before it blocks. Each parked
// goroutine's stack is copied in one read and unwound from its saved context (g.sched) with the
// compiled pcsp table, a pcvalue decode per frame, frame pointers and libdw's CFI: all four must
// give identical frames, end at runtime.goexit (a top frame), and, symbolized with inline
// expansion, end with exactly the fixture's frames from main.block outwards — with the very
// same return addresses where a frame has no inlined calls.
//
// The same stacks, damaged (a garbage return address, a frame-pointer cycle, a truncated copy, a
// start outside the copy), must stop with the right reason.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "goref/binary/dwarf.h"
#include "goref/binary/elf_file.h"
#include "goref/binary/pclntab.h"
#include "goref/target/live_target.h"
#include "goref/unwind/cfi_unwinder.h"
#include "goref/unwind/unwinder.h"
#include "harness/fixture.h"
#include "harness/matrix.h"
#include "unwind_support.h"

namespace goref::testing {
namespace {

using unwind::StopReason;
using unwind::Unwinder;
using unwind::Unwound;
using Method = Unwinder::Method;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

std::string describe(const Unwound& u) {
  std::string s;
  for (size_t i = 0; i < u.frames.size(); ++i)
    s += "  #" + std::to_string(i) + " " + std::string(u.frames[i].function) + " pc " +
         to_hex(u.frames[i].pc) + " sp " + to_hex(u.frames[i].sp) + " fp " +
         to_hex(u.frames[i].fp) + "\n";
  return s + "  stop: " + std::string(unwind::stop_reason_name(u.stop)) + " " + u.detail;
}

// One parked goroutine: what the fixture said and what was read from the process.
struct Parked {
  std::string label;
  std::vector<std::string> funcs;  // logical frames from main.block outwards
  std::vector<uint64_t> pcs;       // runtime.Callers, same order
  GInfo g;
  unwind::StackImage stack;
};

class UnwindTest : public ::testing::TestWithParam<FixtureParam> {
 protected:
  void SetUp() override {
    auto exe = build_fixture(GetParam().spec("deepstack"));
    ASSERT_TRUE(exe.ok()) << exe.error().message();
    exe_ = *exe;
    auto run = RunningFixture::start(exe_);
    ASSERT_TRUE(run.ok()) << run.error().message();
    run_ = std::move(*run);
    auto elf = binary::ElfFile::open(exe_);
    ASSERT_TRUE(elf.ok()) << elf.error().message();
    elf_ = std::move(*elf);
    auto tab = binary::Pclntab::open(*elf_);
    ASSERT_TRUE(tab.ok()) << tab.error().message();
    tab_ = std::make_unique<binary::Pclntab>(std::move(*tab));
    auto bias = bias_from_entry(*tab_, "main.block", run_->fact_u64("func.main.block"));
    ASSERT_TRUE(bias.ok()) << bias.error().message();
    bias_ = *bias;
    if (GetParam().mode != BuildMode::kPie) {
      EXPECT_EQ(bias_, 0u);
    }
    auto dw = binary::Dwarf::open(exe_);
    ASSERT_TRUE(dw.ok()) << dw.error().message();
    auto layout = g_layout(**dw);
    ASSERT_TRUE(layout.ok()) << layout.error().message();

    // Attach, read every g and copy the labelled goroutines' stacks, detach.
    auto t = target::LiveTarget::attach(Pid(run_->pid()));
    ASSERT_TRUE(t.ok()) << t.error().message();
    auto gs = read_allgs(**t, **dw, *layout, bias_);
    ASSERT_TRUE(gs.ok()) << gs.error().message();
    for (const std::string& label : split(run_->fact("labels"), ',')) {
      Parked p;
      p.label = label;
      p.funcs = split(run_->fact("g." + label + ".funcs"), ',');
      for (const auto& s : split(run_->fact("g." + label + ".pcs"), ','))
        p.pcs.push_back(std::stoull(s, nullptr, 0));
      ASSERT_EQ(p.funcs.size(), p.pcs.size()) << label;
      ASSERT_GE(p.funcs.size(), 3u) << label;
      uint64_t goid = run_->fact_u64("g." + label + ".goid");
      auto it =
          std::find_if(gs->begin(), gs->end(), [&](const GInfo& g) { return g.goid == goid; });
      ASSERT_NE(it, gs->end()) << label << ": goroutine " << goid << " not in allgs";
      p.g = *it;
      EXPECT_EQ(p.g.status, 4u) << label << ": not _Gwaiting";
      EXPECT_EQ(p.g.syscallsp, 0u) << label;
      auto st = copy_stack(**t, p.g);
      ASSERT_TRUE(st.ok()) << st.error().message();
      p.stack = std::move(*st);
      parked_.push_back(std::move(p));
    }
    ASSERT_EQ(parked_.size(), 4u);
    (*t).reset();
    unwinder_ = std::make_unique<Unwinder>(*tab_, bias_, elf_->arch());
    ASSERT_NE(unwinder_->compiled(), nullptr);
  }

  unwind::StartState start(const Parked& p) const { return {p.g.pc, p.g.sp, p.g.bp, 0}; }

  std::string exe_;
  std::unique_ptr<RunningFixture> run_;
  std::unique_ptr<binary::ElfFile> elf_;
  std::unique_ptr<binary::Pclntab> tab_;
  uint64_t bias_ = 0;
  std::vector<Parked> parked_;
  std::unique_ptr<Unwinder> unwinder_;
};

TEST_P(UnwindTest, AllMethodsReproduceTheRuntimesOwnStack) {
  auto cfi = unwind::CfiUnwinder::open(exe_, *tab_, bias_, elf_->arch());
  ASSERT_TRUE(cfi.ok()) << cfi.error().message();
  for (const Parked& p : parked_) {
    SCOPED_TRACE(p.label);
    Unwound u = unwinder_->unwind(p.stack, start(p));
    ASSERT_EQ(u.stop, StopReason::kTopFrame) << describe(u);
    ASSERT_FALSE(u.frames.empty());
    EXPECT_EQ(u.frames.back().function, "runtime.goexit") << describe(u);
    EXPECT_EQ(u.frames.front().function, "runtime.gopark") << describe(u);
    EXPECT_EQ(u.frames.front().pc, p.g.pc);
    EXPECT_EQ(u.frames.front().sp, p.g.sp);
    for (size_t i = 1; i < u.frames.size(); ++i) {
      EXPECT_GT(u.frames[i].sp, u.frames[i - 1].sp);
      EXPECT_EQ(u.frames[i].sp, u.frames[i - 1].fp);  // the caller's sp is the callee's CFA
    }

    for (auto [m, name] : {std::pair{Method::kDecodePcsp, "decode pcsp"},
                           std::pair{Method::kFramePointer, "frame pointers"}}) {
      Unwound other = unwinder_->unwind(p.stack, start(p), m);
      auto mm = unwind::compare(u, other);
      EXPECT_FALSE(mm) << name << ": frame " << mm->index << ": " << mm->what << "\n"
                       << describe(other);
    }
    Unwound c = (*cfi)->unwind(p.stack, start(p));
    auto mm = unwind::compare(u, c);
    EXPECT_FALSE(mm) << "CFI: frame " << mm->index << ": " << mm->what << "\n" << describe(c);

    // Logical frames: each physical frame symbolized at its call, inlined calls expanded.
    std::vector<std::string> logical;
    std::vector<size_t> phys_of, count_of(u.frames.size());
    for (size_t i = 0; i < u.frames.size(); ++i) {
      auto frames = tab_->symbolize(u.sym_pc(i) - bias_);
      ASSERT_FALSE(frames.empty()) << "frame " << i;
      EXPECT_EQ(frames.back().function, u.frames[i].function);
      count_of[i] = frames.size();
      for (const auto& f : frames) {
        logical.push_back(f.function);
        phys_of.push_back(i);
      }
    }
    auto first = std::find(logical.begin(), logical.end(), "main.block");
    ASSERT_NE(first, logical.end()) << describe(u);
    size_t b = static_cast<size_t>(first - logical.begin());
    std::vector<std::string> tail(first, logical.end());
    EXPECT_EQ(tail, p.funcs) << describe(u);
    // Return addresses: where a physical frame above main.block is one logical frame, the
    // runtime's pc is exactly the return address the unwinder found.
    size_t checked = 0;
    for (size_t l = b + 1; l < logical.size() && l - b < p.pcs.size(); ++l) {
      size_t i = phys_of[l];
      if (count_of[i] != 1) continue;
      EXPECT_EQ(u.frames[i].pc, p.pcs[l - b]) << "logical frame " << l << " " << logical[l];
      ++checked;
    }
    EXPECT_GE(checked, 2u);  // at least the goroutine's function and goexit
  }
}

TEST_P(UnwindTest, DamagedStacksStopWithTheRightReason) {
  for (const Parked& p : parked_) {
    SCOPED_TRACE(p.label);
    Unwound good = unwinder_->unwind(p.stack, start(p));
    ASSERT_EQ(good.stop, StopReason::kTopFrame);
    ASSERT_GE(good.frames.size(), 4u);
    auto slot = [&](uint64_t addr) { return addr - p.stack.lo.value(); };
    auto put = [](unwind::StackImage& s, uint64_t off, uint64_t v) {
      std::memcpy(s.bytes.data() + off, &v, 8);
    };
    for (Method m : {Method::kCompiledPcsp, Method::kDecodePcsp, Method::kFramePointer}) {
      SCOPED_TRACE(static_cast<int>(m));
      // Frame 2's return address replaced by garbage outside any function.
      {
        unwind::StackImage s = p.stack;
        put(s, slot(good.frames[2].fp - 8), 0xdead0000beefULL);
        Unwound u = unwinder_->unwind(s, start(p), m);
        EXPECT_EQ(u.stop, StopReason::kNoFunc) << describe(u);
        EXPECT_EQ(u.frames.size(), 3u);
      }
      // A return address of 0.
      {
        unwind::StackImage s = p.stack;
        put(s, slot(good.frames[1].fp - 8), 0);
        Unwound u = unwinder_->unwind(s, start(p), m);
        EXPECT_EQ(u.stop, StopReason::kBadFrame) << describe(u);
        EXPECT_EQ(u.frames.size(), 2u);
      }
      // The copy cut in the middle of frame 2: its return address is not in the image.
      {
        unwind::StackImage s = p.stack;
        s.bytes.resize(slot(good.frames[2].fp - 4));
        Unwound u = unwinder_->unwind(s, start(p), m);
        EXPECT_EQ(u.stop, StopReason::kOutsideStack) << describe(u);
        EXPECT_LE(u.frames.size(), 3u);
      }
      // Starting outside the copy.
      {
        auto st = start(p);
        st.sp = p.stack.hi().value() + 64;
        if (m == Method::kFramePointer) st.fp = st.sp;
        Unwound u = unwinder_->unwind(p.stack, st, m);
        EXPECT_EQ(u.stop, StopReason::kOutsideStack) << describe(u);
        EXPECT_TRUE(u.frames.empty());
      }
      // The depth limit.
      {
        Unwound u = unwinder_->unwind(p.stack, start(p), m, 2);
        EXPECT_EQ(u.stop, StopReason::kDepthLimit);
        EXPECT_EQ(u.frames.size(), 2u);
      }
    }
    // A frame-pointer cycle: frame 2's saved bp points back at itself (frame 2's bp slot is
    // fp-16). pcsp does not read saved bps; the frame-pointer walk must refuse to go down.
    {
      unwind::StackImage s = p.stack;
      uint64_t bp2 = good.frames[2].fp - 16;
      put(s, slot(bp2), bp2);
      Unwound u = unwinder_->unwind(s, start(p), Method::kFramePointer);
      EXPECT_EQ(u.stop, StopReason::kBadFrame) << describe(u);
      EXPECT_EQ(u.frames.size(), 3u);
      EXPECT_FALSE(unwind::compare(good, unwinder_->unwind(s, start(p))));
    }
    // A return address pointing back into the same function at a shallower sp: pcsp goes on
    // upwards and never revisits a frame; the walk ends (any reason) within the copy's frames.
    {
      unwind::StackImage s = p.stack;
      for (size_t i = 1; i < good.frames.size(); ++i)
        put(s, slot(good.frames[i].fp - 8), good.frames[1].pc);
      for (Method m : {Method::kCompiledPcsp, Method::kFramePointer}) {
        Unwound u = unwinder_->unwind(s, start(p), m);
        EXPECT_LE(u.frames.size(), s.bytes.size() / 8);
        EXPECT_NE(u.stop, StopReason::kDepthLimit);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Go, UnwindTest,
                         ::testing::ValuesIn(versions_and_modes(
                             {BuildMode::kDefault, BuildMode::kPie, BuildMode::kNoOpt})),
                         param_name);

}  // namespace
}  // namespace goref::testing
