"""NeardupMiddleware: a Scrapy downloader middleware that asks a neardup Tier 1 server about every
fetched page and drops the near-duplicates.

For each http(s) response (after redirects and decompression, at the priority the README
suggests):
  - 200 with an HTML Content-Type: the page is sent (POST /v1/pages, one crawl record: url, html,
    fetched_at), then its status is asked for (GET /v1/status) until it is no longer `pending`.
    An answer whose status is in NEARDUP_DROP_STATUSES drops the response: IgnoreRequest, which
    the request's errback sees (the callback does not). Any other answer tags it:
    response.meta["neardup"] is the answer, proto/api.proto's StatusReply as a dict (Protobuf's
    JSON mapping: 64-bit numbers such as "group" are strings, fields at their default left out).
  - 404 or 410: a `gone` record is sent ({"url": U, "gone": true}) so that the service forgets the
    page; the response goes on unchanged whatever the service answers.
  - anything else goes on untouched.

Fail open: when the service gives no answer within NEARDUP_TIMEOUT (unreachable, refusing the
request, or the page still pending), the response is kept, unless NEARDUP_ON_UNAVAILABLE is
"drop". Either way it is counted in neardup/unavailable and logged.

Settings:
  NEARDUP_URL             the Tier 1 server's base URL, e.g. "https://127.0.0.1:8080"; unset: the
                          middleware is disabled (NotConfigured)
  NEARDUP_CA_FILE         for an https:// URL: the CA certificate the server's is checked against
                          (a `neardup cluster up` cluster's is its directory's ca.pem); unset: the
                          system's trusted CAs
  NEARDUP_TIMEOUT         seconds for one page's whole exchange: send, wait, answer (default 10)
  NEARDUP_TOKEN           bearer token for the writes, when the server is configured with one
  NEARDUP_ON_UNAVAILABLE  "pass" (default: keep the response) or "drop"
  NEARDUP_DROP_STATUSES   the answers that drop the response (default ["duplicate"])

Stats: neardup/sent (pages sent), neardup/<status> per answer (unique, winner, duplicate, ...),
neardup/dropped, neardup/unavailable, neardup/gone (gone records accepted) and
neardup/gone_failed.

Threads: the exchange uses the standard library's urllib, which blocks, so it runs off the
reactor: process_response returns the Deferred of twisted.internet.threads.deferToThreadPool,
which Scrapy's downloader middleware manager waits for while the reactor goes on with the other
downloads. Twisted's own asynchronous client (twisted.web.client.Agent) would avoid the threads,
at the price of request bodies as producers, reading replies by callbacks and timed polling by
deferLater, for no gain here: an exchange is mostly a wait for the page's batch to commit, and a
thread sleeping through it costs little. The pool is the middleware's own, sized to
CONCURRENT_REQUESTS (Scrapy never has more responses in its downloader than that), rather than
the reactor's shared pool (REACTOR_THREADPOOL_MAXSIZE, default 10): exchanges that wait for
commits, up to NEARDUP_TIMEOUT when the service is slow, would hold up Scrapy's DNS lookups, which
run in that shared pool.
"""
import http.client
import json
import logging
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

logger = logging.getLogger(__name__)

HTML_TYPES = (b"text/html", b"application/xhtml+xml")
GONE_STATUSES = (404, 410)
# The waits between status questions while a page is pending: from the first, growing by the
# factor up to the last (a batch commits a few hundred milliseconds after the ingest log goes
# idle, by default).
POLL_FIRST, POLL_GROWTH, POLL_MAX = 0.05, 1.5, 0.5


class ServiceError(Exception):
    """The service gave no usable answer: unreachable, refusing the request, or still pending."""


class NeardupClient:
    """The HTTP exchanges with a Tier 1 server. Blocking: called on the middleware's threads."""

    def __init__(self, base_url, token=None, ca_file=None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        # https: the server's certificate checked against ca_file (or the system's CAs), and its
        # name against the URL's host (the default context checks both).
        self.tls = ssl.create_default_context(cafile=ca_file) if self.base_url.startswith("https://") else None
        if ca_file and self.tls is None:
            raise ValueError(f"NEARDUP_CA_FILE is set but NEARDUP_URL {base_url!r} is not https://")

    def answer(self, record, deadline):
        """Sends one crawl record and returns the service's answer for its URL once it is no
        longer pending (a StatusReply dict). ServiceError past `deadline` (time.monotonic())."""
        self.ingest(record, deadline)
        wait = POLL_FIRST
        while True:
            time.sleep(max(0.0, min(wait, deadline - time.monotonic())))
            if time.monotonic() >= deadline:
                raise ServiceError(f"{record['url']}: still pending at the timeout")
            wait = min(wait * POLL_GROWTH, POLL_MAX)
            reply = self.status(record["url"], deadline)
            if reply.get("status") != "pending":
                return reply

    def ingest(self, record, deadline):
        """POSTs one record; returns once the service has it durably (202). Backpressure (429)
        and a stopping server (503) are tried again after their Retry-After while the deadline
        allows."""
        body = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        headers = {"Content-Type": "application/x-ndjson"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        while True:
            code, reply_headers, reply = self._call("POST", "/v1/pages", body, headers, deadline)
            if code == 202:
                return
            retry_after = _seconds(reply_headers.get("Retry-After"))
            if code not in (429, 503) or retry_after is None or time.monotonic() + retry_after >= deadline:
                raise ServiceError(f"POST /v1/pages for {record['url']}: {code} {_error_text(reply)}")
            time.sleep(retry_after)

    def status(self, url, deadline):
        """GET /v1/status for `url`: the StatusReply as a dict."""
        path = "/v1/status?" + urllib.parse.urlencode({"url": url})
        code, _, reply = self._call("GET", path, None, {}, deadline)
        if code != 200:
            raise ServiceError(f"GET /v1/status for {url}: {code} {_error_text(reply)}")
        try:
            return json.loads(reply)
        except ValueError as e:
            raise ServiceError(f"GET /v1/status for {url}: not JSON: {e}") from e

    def _call(self, method, path, body, headers, deadline):
        """One request, bounded by the deadline: (status code, headers, body). Replies of every
        status are returned; ServiceError when there is none."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise ServiceError(f"{method} {path}: timed out")
        request = urllib.request.Request(self.base_url + path, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=left, context=self.tls) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.headers, e.read()
        except (OSError, http.client.HTTPException, ValueError) as e:
            raise ServiceError(f"{method} {path}: {e}") from e


def _seconds(value):
    """A Retry-After header's delay in seconds (None when absent or a date)."""
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def _error_text(body):
    """The `error` of an ErrorReply body, or the body's start."""
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return body[:200].decode("utf-8", "replace")


def _is_html(response):
    """A page Scrapy decoded whose Content-Type is HTML."""
    if not isinstance(response, TextResponse):
        return False
    content_type = response.headers.get("Content-Type") or b""
    return content_type.split(b";")[0].strip().lower() in HTML_TYPES


class NeardupMiddleware:
    """The downloader middleware (see the module's docstring)."""

    def __init__(self, settings, stats):
        base_url = settings.get("NEARDUP_URL")
        if not base_url:
            raise NotConfigured("NEARDUP_URL is not set")
        self.client = NeardupClient(base_url, settings.get("NEARDUP_TOKEN"), settings.get("NEARDUP_CA_FILE"))
        self.timeout = settings.getfloat("NEARDUP_TIMEOUT", 10.0)
        self.on_unavailable = settings.get("NEARDUP_ON_UNAVAILABLE", "pass")
        if self.on_unavailable not in ("pass", "drop"):
            raise ValueError(f"NEARDUP_ON_UNAVAILABLE must be 'pass' or 'drop', not {self.on_unavailable!r}")
        self.drop_statuses = frozenset(settings.getlist("NEARDUP_DROP_STATUSES", ["duplicate"]))
        self.stats = stats
        self.pool = ThreadPool(minthreads=0, maxthreads=settings.getint("CONCURRENT_REQUESTS"), name="neardup")

    @classmethod
    def from_crawler(cls, crawler):
        middleware = cls(crawler.settings, crawler.stats)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_opened(self):
        self.pool.start()

    def spider_closed(self):
        # Every response has left the downloader by now: the threads are idle, the join is quick.
        self.pool.stop()

    def process_response(self, request, response, spider):
        if not response.url.startswith(("http://", "https://")):  # the service takes http(s) URLs only
            return response
        if response.status in GONE_STATUSES:
            d = self._in_thread(self.client.ingest, {"url": response.url, "gone": True})
            d.addCallbacks(self._gone_sent, self._gone_failed, callbackArgs=(response,), errbackArgs=(response,))
            return d
        if response.status != 200 or not _is_html(response):
            return response
        fetched_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.stats.inc_value("neardup/sent")
        d = self._in_thread(self.client.answer, {"url": response.url, "html": response.text, "fetched_at": fetched_at})
        d.addCallbacks(self._answered, self._unavailable, callbackArgs=(request, response),
                       errbackArgs=(response,))
        return d

    def _in_thread(self, exchange, record):
        """Runs exchange(record, deadline) on the pool; its Deferred fires on the reactor."""
        from twisted.internet import reactor  # the one Scrapy installed: imported at call time

        deadline = time.monotonic() + self.timeout
        return deferToThreadPool(reactor, self.pool, exchange, record, deadline)

    def _answered(self, answer, request, response):
        status = answer.get("status", "")
        self.stats.inc_value(f"neardup/{status}")
        if status in self.drop_statuses:
            self.stats.inc_value("neardup/dropped")
            raise IgnoreRequest(f"neardup: {response.url} is {status} (winner {answer.get('winner', '')})")
        request.meta["neardup"] = answer  # the response's meta, once Scrapy ties the two
        return response

    def _unavailable(self, failure, response):
        failure.trap(ServiceError)
        self.stats.inc_value("neardup/unavailable")
        logger.warning("neardup: no answer for %s: %s", response.url, failure.value)
        if self.on_unavailable == "drop":
            self.stats.inc_value("neardup/dropped")
            raise IgnoreRequest(f"neardup: no answer for {response.url}")
        return response

    def _gone_sent(self, _, response):
        self.stats.inc_value("neardup/gone")
        return response

    def _gone_failed(self, failure, response):
        failure.trap(ServiceError)
        self.stats.inc_value("neardup/gone_failed")
        logger.warning("neardup: the gone record of %s was not taken: %s", response.url, failure.value)
        return response
