// Text for people on a terminal: aligned tables, durations, and text that cannot move the cursor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fencekeeper {

// Columns, each as wide as its widest cell (header included), two spaces apart.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool alignRight = false;  // numbers
  };
  explicit TextTable(std::vector<Column> columns);
  // REQUIRES: as many cells as columns.
  void addRow(std::vector<std::string> cells);
  // The header line and the rows, each line starting with `indent`; no trailing spaces.
  std::string render(const std::string& indent) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` with control characters (a label's escape sequences, newlines; C0, DEL, C1) and invalid
// UTF-8 as \xNN per byte: nothing in it can move a terminal's cursor.
std::string printable(const std::string& text);
// "850ms", "12.3s", "4m05s", "2h07m", "3d04h".
std::string humanDuration(uint64_t ms);

}  // namespace fencekeeper
