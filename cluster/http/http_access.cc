#include "cluster/http/http_access.h"

#include <algorithm>

#include "cluster/http/net.h"

namespace neardup::cluster {
namespace {

namespace http = boost::beast::http;

HttpResponse Refuse(const HttpRequest& header, unsigned code, const std::string& why) {
  HttpResponse r = JsonError(header, code, why);
  if (code == 401) r.set(http::field::www_authenticate, "Bearer");
  return r;
}

bool Presents(const HttpRequest& header, const std::string& token) {
  return !token.empty() && BearerAuthorized(header, token);
}

}  // namespace

bool IsLoopbackHostHeader(std::string_view host) {
  std::string name;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    name = std::string(host.substr(1, close - 1));
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
  } else {
    name = std::string(host.substr(0, host.find(':')));
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return IsLoopbackHost(name);
}

HeaderVerdict HttpAccess::Check(const HttpRequest& header, Need need, uint64_t max_body_bytes) const {
  const http::verb m = header.method();
  return Check(header, need, max_body_bytes, m != http::verb::get && m != http::verb::head);
}

HeaderVerdict HttpAccess::Check(const HttpRequest& header, Need need, uint64_t max_body_bytes, bool changes) const {
  HeaderVerdict v;
  v.max_body_bytes = max_body_bytes;
  auto refuse = [&](unsigned code, const std::string& why) {
    ++refusals_;
    v.refuse = Refuse(header, code, why);
    return v;
  };
  if (o_.loopback_only) {
    const auto host = header.find(http::field::host);
    const std::string_view value = host == header.end() ? std::string_view() : std::string_view(host->value().data(), host->value().size());
    if (!IsLoopbackHostHeader(value)) {
      return refuse(421, "this server answers requests addressed to loopback only (Host: " +
                             std::string(value.substr(0, 100)) + ")");
    }
  }
  if (changes) {
    const auto origin = header.find(http::field::origin);
    if (origin != header.end()) {
      const std::string value(origin->value().data(), std::min<size_t>(origin->value().size(), 200));
      if (std::find(o_.allowed_origins.begin(), o_.allowed_origins.end(), value) == o_.allowed_origins.end()) {
        return refuse(403, "writes from a web page of origin " + value + " are refused (tier1_server.allowed_origins)");
      }
    }
  }
  if (need == kWrite && !o_.write_token.empty() && !Presents(header, o_.write_token)) {
    return refuse(401, "a bearer token is required to write");
  }
  if (need == kRead && !o_.read_token.empty() && !Presents(header, o_.read_token) &&
      !Presents(header, o_.write_token)) {
    return refuse(401, "a bearer token (the read token) is required for this read");
  }
  return v;
}

}  // namespace neardup::cluster
