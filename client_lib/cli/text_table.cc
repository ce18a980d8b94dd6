#include "client_lib/cli/text_table.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "common/utf8_text.h"

namespace fencekeeper {
namespace {

// Characters on the screen: UTF-8 continuation bytes take no column.
size_t widthOf(const std::string& text) {
  return std::count_if(text.begin(), text.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(const std::string& indent) const {
  std::vector<size_t> widths;
  for (const auto& c : columns_) widths.push_back(widthOf(c.header));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], widthOf(row[i]));
  }
  std::string out;
  auto line = [&](auto cellOf) {
    std::string text = indent;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = cellOf(i);
      std::string pad(widths[i] - widthOf(cell), ' ');
      if (i > 0) text += "  ";
      text += columns_[i].alignRight ? pad + cell : cell + pad;
    }
    while (text.size() > indent.size() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  };
  line([&](size_t i) -> const std::string& { return columns_[i].header; });
  for (const auto& row : rows_) line([&](size_t i) -> const std::string& { return row[i]; });
  return out;
}

std::string printable(const std::string& text) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    TextUnit unit = textUnitAt(text, at);
    at += unit.bytes.size();
    if (unit.valid && !isControl(unit.codePoint)) {
      out += unit.bytes;
      continue;
    }
    for (char c : unit.bytes) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    }
  }
  return out;
}

std::string humanDuration(uint64_t ms) {
  char text[32];
  const uint64_t s = ms / 1000, m = s / 60, h = m / 60, d = h / 24;
  if (ms < 1000) {
    std::snprintf(text, sizeof text, "%llums", static_cast<unsigned long long>(ms));
  } else if (s < 60) {
    std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms / 100) / 10.0);
  } else if (m < 60) {
    std::snprintf(text, sizeof text, "%llum%02llus", static_cast<unsigned long long>(m),
                  static_cast<unsigned long long>(s % 60));
  } else if (h < 24) {
    std::snprintf(text, sizeof text, "%lluh%02llum", static_cast<unsigned long long>(h),
                  static_cast<unsigned long long>(m % 60));
  } else {
    std::snprintf(text, sizeof text, "%llud%02lluh", static_cast<unsigned long long>(d),
                  static_cast<unsigned long long>(h % 24));
  }
  return text;
}

}  // namespace fencekeeper
