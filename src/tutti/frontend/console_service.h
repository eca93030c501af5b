// ConsoleService: the console's HTTP routes in front of another handler
// (the KServe routes) on the same listener:
//
//   GET /console         the live console page (console_assets.h)
//   GET /console/events  its samples as server-sent events (console_feed.h)
//
// Both need administrative access (frontend/access.h), as /metrics does;
// browsers may give the token as HTTP Basic credentials (any user name, the
// token as password), so a refused page asks for them (401 with a Basic
// challenge). Everything else goes to the next handler.
#ifndef TUTTI_FRONTEND_CONSOLE_SERVICE_H_
#define TUTTI_FRONTEND_CONSOLE_SERVICE_H_

#include "tutti/frontend/console_feed.h"
#include "tutti/frontend/http_server.h"
#include "tutti/frontend/inference_frontend.h"

namespace tutti {

class ConsoleService final : public HttpHandler {
 public:
  // `frontend`, `feed` and `next` must outlive this.
  ConsoleService(const InferenceFrontend* frontend, ConsoleFeed* feed, HttpHandler* next);
  void Handle(HttpRequest request, Respond respond) override;

 private:
  const InferenceFrontend* const frontend_;
  ConsoleFeed* const feed_;
  HttpHandler* const next_;
};

}  // namespace tutti

#endif  // TUTTI_FRONTEND_CONSOLE_SERVICE_H_
