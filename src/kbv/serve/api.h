// kbv serve's routes (docs/serve.md): POST /evaluate (a record, or 400 for a request that cannot
// be evaluated as sent, 503 when busy, 500 when the evaluation could not be carried out),
// GET /health, GET /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "kbv/serve/http_server.h"
#include "kbv/serve/service.h"

namespace kbv::serve {

class Api {
 public:
  Api(Service& service, Intake intake);
  HttpResponse operator()(const HttpRequest& request);

 private:
  HttpResponse evaluate(const std::string& body);

  Service& service_;
  const Intake intake_;
  const std::string id_prefix_;  // the service's start and random bits: ids stay unique across restarts and services
  std::atomic<std::uint64_t> next_id_ = 0;
};

}  // namespace kbv::serve
