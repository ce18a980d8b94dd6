#include "client_lib/cli/text_table.h"

#include <gtest/gtest.h>

namespace fencekeeper {
namespace {

TEST(TextTableTest, ColumnsAreAsWideAsTheirWidestCellAndNumbersAlignRight) {
  TextTable table({{"LOCK"}, {"TOKEN", true}, {"OWNER"}});
  table.addRow({"orders/reconcile", "7", "pod-a"});
  table.addRow({"b", "4294967296", ""});
  EXPECT_EQ(table.render("  "),
            "  LOCK                   TOKEN  OWNER\n"
            "  orders/reconcile           7  pod-a\n"
            "  b                 4294967296\n");  // no trailing spaces
}

TEST(TextTableTest, MultiByteCharactersTakeOneColumn) {
  TextTable table({{"OWNER"}, {"N", true}});
  table.addRow({"zoë", "1"});
  EXPECT_EQ(table.render(""), "OWNER  N\nzoë    1\n");
}

TEST(TextTableTest, ControlBytesAreEscapedSoALabelCannotMoveTheCursor) {
  EXPECT_EQ(printable("pod\x1b[2J\n\x7f"), "pod\\x1b[2J\\x0a\\x7f");
  EXPECT_EQ(printable("plain zoë"), "plain zoë");
}

TEST(TextTableTest, DurationsForPeople) {
  EXPECT_EQ(humanDuration(0), "0ms");
  EXPECT_EQ(humanDuration(999), "999ms");
  EXPECT_EQ(humanDuration(1'000), "1.0s");
  EXPECT_EQ(humanDuration(12'345), "12.3s");
  EXPECT_EQ(humanDuration(59'999), "59.9s");
  EXPECT_EQ(humanDuration(60'000), "1m00s");
  EXPECT_EQ(humanDuration(245'000), "4m05s");
  EXPECT_EQ(humanDuration(3'600'000), "1h00m");
  EXPECT_EQ(humanDuration(7'620'000), "2h07m");
  EXPECT_EQ(humanDuration(273'600'000), "3d04h");
}

}  // namespace
}  // namespace fencekeeper
