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
