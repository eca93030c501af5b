#include "tutti/frontend/console_service.h"

#include <utility>

#include "tutti/console/console_assets.h"
#include "tutti/codec/kserve_json.h"

namespace tutti {

ConsoleService::ConsoleService(const InferenceFrontend* frontend, ConsoleFeed* feed, HttpHandler* next)
    : frontend_(frontend), feed_(feed), next_(next) {}

void ConsoleService::Handle(HttpRequest request, Respond respond) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  const bool page = path == "/console" || path == "/console/";
  if (!page && path != "/console/events") return next_->Handle(std::move(request), std::move(respond));
  if (absl::Status s = frontend_->Authorize(Api::kAdmin, request.Header("Authorization")); !s.ok()) {
    HttpResponse r{s.code() == absl::StatusCode::kUnauthenticated ? 401 : 403, WriteError(s.message())};
    if (r.status == 401) r.headers.push_back({"WWW-Authenticate", R"(Basic realm="tutti console", charset="UTF-8")"});
    return respond(std::move(r));
  }
  if (request.method != "GET") return respond(HttpResponse{405, WriteError("use GET")});
  if (page) {
    static const std::string* const kPage = new std::string(ConsolePage());
    return respond(HttpResponse{200, *kPage, "text/html; charset=utf-8", {{"Cache-Control", "no-cache"}}});
  }
  HttpResponse events{200, "", "text/event-stream"};
  events.headers.push_back({"Cache-Control", "no-cache"});
  events.stream = [feed = feed_](std::shared_ptr<HttpStream> stream) { feed->Subscribe(std::move(stream)); };
  respond(std::move(events));
}

}  // namespace tutti
