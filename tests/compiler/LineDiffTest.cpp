// The report's IR diffs (compiler/Inspect/LineDiff.h): lines that differ
// only in renumbered names are kept, lines whose names do not rename one
// to one (an operand swap) are changes.
#include "compiler/Inspect/LineDiff.h"

#include <gtest/gtest.h>

namespace quill {
namespace {

std::pair<size_t, size_t> ignoringNames(const char *before, const char *after) {
  return diffCounts(lineDiff(before, after, 3, 1000, nullptr, LineMatch::IgnoringNames));
}

constexpr const char *kFunction = R"(func.func @f(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.addf %arg0, %arg1 : f32
  %1 = arith.subf %0, %arg1 : f32
  %2 = arith.mulf %1, %0 : f32
  return %2 : f32
}
)";

TEST(LineDiff, AnInsertedOpRenumbersTheRestWithoutChangingIt) {
  const char *after = R"(func.func @f(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.constant 1.0 : f32
  %1 = arith.addf %arg0, %arg1 : f32
  %2 = arith.subf %1, %arg1 : f32
  %3 = arith.mulf %2, %1 : f32
  return %3 : f32
}
)";
  EXPECT_EQ(ignoringNames(kFunction, after), std::make_pair(size_t(0), size_t(1)));
  // Compared exactly, every renumbered line differs.
  EXPECT_EQ(diffCounts(lineDiff(kFunction, after)), std::make_pair(size_t(4), size_t(5)));
}

TEST(LineDiff, SwappedOperandsAreAChange) {
  const char *after = R"(func.func @f(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.addf %arg0, %arg1 : f32
  %1 = arith.subf %arg1, %0 : f32
  %2 = arith.mulf %1, %0 : f32
  return %2 : f32
}
)";
  EXPECT_EQ(ignoringNames(kFunction, after), std::make_pair(size_t(1), size_t(1)));
  // A use of another value, its key unchanged, is a change too.
  const char *rewired = R"(func.func @f(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.addf %arg0, %arg1 : f32
  %1 = arith.subf %0, %arg1 : f32
  %2 = arith.mulf %0, %0 : f32
  return %2 : f32
}
)";
  EXPECT_EQ(ignoringNames(kFunction, rewired), std::make_pair(size_t(1), size_t(1)));
}

TEST(LineDiff, EachFunctionNamesItsValuesAfresh) {
  // Both functions have their own %0; the second one's are renumbered
  // after an inserted op, which is the only change.
  const char *before = R"(func.func @f(%arg0: f32) -> f32 {
  %0 = arith.addf %arg0, %arg0 : f32
  return %0 : f32
}
func.func @g(%arg0: f32) -> f32 {
  %0 = arith.mulf %arg0, %arg0 : f32
  return %0 : f32
}
)";
  const char *after = R"(func.func @f(%arg0: f32) -> f32 {
  %0 = arith.addf %arg0, %arg0 : f32
  return %0 : f32
}
func.func @g(%arg0: f32) -> f32 {
  %0 = arith.constant 2.0 : f32
  %1 = arith.mulf %arg0, %arg0 : f32
  return %1 : f32
}
)";
  EXPECT_EQ(ignoringNames(before, after), std::make_pair(size_t(0), size_t(1)));
}

TEST(LineDiff, SiblingRegionsNumberTheirValuesFromTheSameCount) {
  // MLIR numbers each region from its parent's count, so both loop
  // bodies hold a %2; an op inserted in the first renumbers only its own.
  const char *before = R"(func.func @f(%arg0: index) {
  %0 = arith.constant 0 : index
  %1 = arith.constant 1 : index
  scf.for %arg1 = %0 to %arg0 step %1 {
    %2 = arith.addi %arg1, %arg1 : index
    %3 = arith.muli %2, %2 : index
  }
  scf.for %arg1 = %0 to %arg0 step %1 {
    %2 = arith.subi %arg1, %1 : index
    %3 = arith.muli %2, %arg1 : index
  }
  return
}
)";
  const char *after = R"(func.func @f(%arg0: index) {
  %0 = arith.constant 0 : index
  %1 = arith.constant 1 : index
  scf.for %arg1 = %0 to %arg0 step %1 {
    %2 = arith.constant 7 : index
    %3 = arith.addi %arg1, %arg1 : index
    %4 = arith.muli %3, %3 : index
  }
  scf.for %arg1 = %0 to %arg0 step %1 {
    %2 = arith.subi %arg1, %1 : index
    %3 = arith.muli %2, %arg1 : index
  }
  return
}
)";
  EXPECT_EQ(ignoringNames(before, after), std::make_pair(size_t(0), size_t(1)));
}

TEST(LineDiff, ALineCannotRenameOneNameTwoWays) {
  // %4 and %5 come from changed lines, so nothing maps them yet: the kept
  // line itself must not map %4 to both %4 and %5.
  const char *before = R"(func.func @f(%arg0: f32) -> f32 {
  %4 = arith.addf %arg0, %arg0 : f32
  %5 = arith.mulf %arg0, %arg0 : f32
  %6 = arith.subf %4, %4 : f32
  return %6 : f32
}
)";
  const char *after = R"(func.func @f(%arg0: f32) -> f32 {
  %4 = arith.divf %arg0, %arg0 : f32
  %5 = arith.maximumf %arg0, %arg0 : f32
  %6 = arith.subf %4, %5 : f32
  return %6 : f32
}
)";
  EXPECT_EQ(ignoringNames(before, after), std::make_pair(size_t(3), size_t(3)));
}

TEST(LineDiff, AliasesRenameAcrossTheModule) {
  const char *before = "#map = affine_map<(d0) -> (d0)>\n"
                       "#map1 = affine_map<(d0) -> (0)>\n"
                       "func.func @f() attributes {a = #map, b = #map1} {\n"
                       "  return\n"
                       "}\n";
  // Swapping which alias each attribute names is a change; renumbering
  // both consistently is not.
  const char *swapped = "#map = affine_map<(d0) -> (d0)>\n"
                        "#map1 = affine_map<(d0) -> (0)>\n"
                        "func.func @f() attributes {a = #map1, b = #map} {\n"
                        "  return\n"
                        "}\n";
  const char *renumbered = "#map2 = affine_map<(d0) -> (d0)>\n"
                           "#map3 = affine_map<(d0) -> (0)>\n"
                           "func.func @f() attributes {a = #map2, b = #map3} {\n"
                           "  return\n"
                           "}\n";
  EXPECT_EQ(ignoringNames(before, swapped), std::make_pair(size_t(1), size_t(1)));
  EXPECT_EQ(ignoringNames(before, renumbered), std::make_pair(size_t(0), size_t(0)));
}

} // namespace
} // namespace quill
