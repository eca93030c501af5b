#include "tutti/console/console_assets.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tutti/core/json_quote.h"

namespace tutti {
namespace {

// HTML-escapes text for the page's title.
std::string Html(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}});
}

std::string Page(absl::string_view title, absl::string_view app_js, absl::string_view data) {
  // One pass: what is put in is not searched again. "</" cannot end the
  // data's <script> early.
  return absl::StrReplaceAll(console_assets::kPageHtml,
                             {{"{{TITLE}}", Html(title)},
                              {"{{UPLOT_CSS}}", console_assets::kUplotCss},
                              {"{{UPLOT_JS}}", console_assets::kUplotJs},
                              {"{{CHARTS_JS}}", console_assets::kChartsJs},
                              {"{{APP_JS}}", app_js},
                              {"{{DATA}}", absl::StrReplaceAll(data, {{"</", "<\\/"}})}});
}

}  // namespace

std::string ConsolePage() { return Page("Tutti console", console_assets::kConsoleJs, "{}"); }

std::string ReportPage(absl::string_view title, absl::string_view subtitle, absl::string_view kind,
                       absl::string_view data_json) {
  return Page(title, console_assets::kReportJs,
              absl::StrCat(R"({"kind":)", JsonQuote(kind), R"(,"subtitle":)", JsonQuote(subtitle), R"(,"data":)",
                           data_json, "}"));
}

absl::Status WriteReport(const std::string& path, absl::string_view title, absl::string_view subtitle,
                         absl::string_view kind, absl::string_view data_json) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << ReportPage(title, subtitle, kind, data_json);
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write the report to ", path));
  return absl::OkStatus();
}

}  // namespace tutti
