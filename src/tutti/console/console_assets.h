// The console's pages, built from files embedded in the binary at build time
// (embed_assets.cmake): Tutti's page and scripts (web/) and uPlot, the
// charting library scripts/setup.sh installs from npm. Every page is
// self-contained: styles, uPlot and scripts inline, nothing fetched.
#ifndef TUTTI_CONSOLE_CONSOLE_ASSETS_H_
#define TUTTI_CONSOLE_CONSOLE_ASSETS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tutti {
namespace console_assets {
extern const char kPageHtml[];
extern const char kChartsJs[];
extern const char kConsoleJs[];
extern const char kReportJs[];
extern const char kUplotJs[];
extern const char kUplotCss[];
}  // namespace console_assets

// The live console (GET /console): it draws /console/events.
std::string ConsolePage();

// A report page of `kind` ("simulation": a SimSeries, "load": a load test;
// see report.js) drawing `data_json` (a JSON object) once.
std::string ReportPage(absl::string_view title, absl::string_view subtitle, absl::string_view kind,
                       absl::string_view data_json);

// Writes ReportPage() to `path`. Errors: the file cannot be written.
absl::Status WriteReport(const std::string& path, absl::string_view title, absl::string_view subtitle,
                         absl::string_view kind, absl::string_view data_json);

}  // namespace tutti

#endif  // TUTTI_CONSOLE_CONSOLE_ASSETS_H_
