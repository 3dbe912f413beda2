#!/usr/bin/env python3
"""End to end: a Scrapy crawl of a small site through NeardupMiddleware and a neardup Tier 1 server.

    python3 clients/scrapy/test_e2e.py --neardup build/bin/neardup

Serves a site of HTML pages (articles, near-copies of some of them, dead links) on a loopback
http.server, starts `neardup tier1-server` on a fresh store (its partition map made by
`neardup run` on a crawl of the same pages), and crawls the site with Scrapy in a subprocess (the
Twisted reactor cannot be started twice in one process) with the middleware enabled. Then asks the
service for every page and checks that the pages the middleware dropped are exactly those the
service answers `duplicate`, that some were dropped and some kept, and that every page was
reached. Exit status 0 on success. Every wait is bounded; every process started is ended, on
failure too.

Scrapy must be importable by the interpreter that runs this: Debian's python3-scrapy installs it
for /usr/bin/python3 (a python3 earlier on PATH, such as a pyenv one, may not see it).
"""
import argparse
import http.server
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

try:
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import IgnoreRequest
    from scrapy.spidermiddlewares.httperror import HttpError
except ImportError:
    sys.exit(f"test_e2e: Scrapy is not importable by {sys.executable}; install python3-scrapy and run this with "
             "the interpreter it is installed for (e.g. /usr/bin/python3)")

# The site. An index links ARTICLES articles (/articles/N.html, each WORDS random words of its
# own: no text in common with another) and DEAD links (404). Article N of COPIES has that many
# near-copies, /articles/N.html?ref=feed&copy=K: the same page with a word or two changed
# (Jaccard over 5-word shingles about 0.95, above the service's 0.9), linked only from the article.
#
# Why "the dropped pages are exactly those answered duplicate at the end" is sound for this site,
# each URL being fetched once: a page's answer changes after it was crawled only when a later page
# joins its group and wins it, or a page it lost to leaves. Neither happens here:
# - A copy is linked only from its article, so the spider asks for it only after the middleware
#   let the article through, which is after the article's answer was committed: a copy always
#   joins its article's group, never the other way round.
# - The article beats its copies under the service's winner rules, whichever came first: no
#   popularity is sent (a tie), and a static URL beats a dynamic one (the copies' query string);
#   it is shorter too. So the article is unique, then the winner; a copy is duplicate when it is
#   crawled (copies of one article crawled together both lose to the article) and stays so.
# - The articles and the index share no text: every other page is alone in its group.
ARTICLES = 30
WORDS = 400
COPIES = {2: 1, 5: 2, 9: 1, 14: 1, 17: 2, 22: 1, 26: 1}
DEAD = ["/articles/31.html", "/archive/2019/"]
TOKEN = "scrapy-e2e-token"
# Bounds on the waits (seconds); a run takes a few seconds.
RUN_TIMEOUT, START_TIMEOUT, CRAWL_TIMEOUT, SETTLE_TIMEOUT = 30, 15, 60, 10


def make_site():
    """The site's pages: {path (with query): html}."""
    rng = random.Random(20240603)
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pe", "dra", "qu", "zen", "bri", "tol", "fa"]
    vocabulary = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(6000)})

    def page(title, text, links):
        anchors = " ".join(f'<a href="{href}">{label}</a>' for href, label in links)
        return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head>'
                f"<body><h1>{title}</h1><p>{text}</p><nav>{anchors}</nav></body></html>")

    pages = {}
    index_links = []
    for n in range(1, ARTICLES + 1):
        path = f"/articles/{n}.html"
        title = " ".join(rng.choices(vocabulary, k=4)).title()
        words = rng.choices(vocabulary, k=WORDS)
        copies = [f"{path}?ref=feed&copy={k}" for k in range(1, COPIES.get(n, 0) + 1)]
        links = [("/", "home")] + [(c.replace("&", "&amp;"), "print") for c in copies]
        pages[path] = page(title, " ".join(words), links)
        for k, copy in enumerate(copies, 1):
            changed = list(words)
            for at in rng.sample(range(WORDS), k):  # copy K changes K words
                changed[at] = f"changed{k}x{at}"
            pages[copy] = page(title, " ".join(changed), links)
        index_links.append((path, title))
    index_links += [(d, "archive") for d in DEAD]
    pages["/"] = page("Index", "The articles of this site, newest first.", index_links)
    return pages


def serve(pages):
    """Serves `pages` on a loopback port, in a thread: the server (shut it down)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            html = pages.get(self.path)
            body = (html or "<html><body>Not found</body></html>").encode("utf-8")
            self.send_response(200 if html else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class SiteSpider(scrapy.Spider):
    """Follows every link of the site; records the pages kept and dropped, and the failures."""

    name = "site"

    def __init__(self, start_url, result, **kwargs):
        super().__init__(**kwargs)
        self.start_url = start_url
        self.result = result
        self.kept, self.dropped, self.failed = {}, [], {}

    def start_requests(self):
        yield scrapy.Request(self.start_url, callback=self.parse, errback=self.errback)

    def parse(self, response):
        self.kept[response.url] = response.meta.get("neardup", {}).get("status", "")
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse, errback=self.errback)

    def errback(self, failure):
        url = failure.request.url
        if failure.check(HttpError):  # an IgnoreRequest too: asked first
            self.failed[url] = failure.value.response.status
        elif failure.check(IgnoreRequest):
            self.dropped.append(url)
        else:
            self.failed[url] = repr(failure.value)

    def closed(self, reason):
        stats = {k: v for k, v in self.crawler.stats.get_stats().items() if k.startswith("neardup/")}
        with open(self.result, "w") as f:
            json.dump({"reason": reason, "kept": self.kept, "dropped": self.dropped, "failed": self.failed,
                       "stats": stats}, f)


def crawl(start_url, service_url, ca_file, result):
    """The subprocess: crawls the site through the middleware, writes what it saw to `result`."""
    process = CrawlerProcess({
        "DOWNLOADER_MIDDLEWARES": {"neardup_scrapy.NeardupMiddleware": 570},
        "NEARDUP_URL": service_url,
        "NEARDUP_TOKEN": TOKEN,
        "NEARDUP_CA_FILE": ca_file,
        "NEARDUP_TIMEOUT": 10,
        "ROBOTSTXT_OBEY": False,
        "RETRY_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 10,
        "CLOSESPIDER_TIMEOUT": CRAWL_TIMEOUT - 15,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "LOG_LEVEL": "INFO",
    })
    process.crawl(SiteSpider, start_url=start_url, result=result)
    process.start()


class Failed(Exception):
    """A check of the test failed."""


def check(condition, message):
    if not condition:
        raise Failed(message)


def no_proxy_opener(ca_file):
    """urllib without proxies (everything here is on loopback), trusting the cluster's CA."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                       urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file)))


def ask(opener, service_url, url):
    """The service's StatusReply for `url`."""
    query = urllib.parse.urlencode({"url": url})
    with opener.open(f"{service_url}/v1/status?{query}", timeout=5) as r:
        return json.loads(r.read())


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def start_tier1(neardup, tmp, pages, site_url):
    """Makes a partition map from a crawl of the site and starts a Tier 1 server on a new store with
    it: (the process, its base URL)."""
    crawl_file = os.path.join(tmp, "crawl.jsonl")
    with open(crawl_file, "w") as f:
        for path, html in pages.items():
            f.write(json.dumps({"url": site_url + path, "html": html}) + "\n")
    run = subprocess.run([neardup, "--log-level", "warn", "run", "--input", crawl_file, "--store",
                          os.path.join(tmp, "mapstore"), "--shards", "2"],
                         capture_output=True, text=True, timeout=RUN_TIMEOUT)
    check(run.returncode == 0, f"neardup run failed ({run.returncode}):\n{run.stderr}")
    token_file = os.path.join(tmp, "token")
    with open(os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(TOKEN + "\n")
    # HTTPS, as a cluster serves it: the cluster's CA and a member certificate for loopback.
    certs = os.path.join(tmp, "certs")
    made = subprocess.run([neardup, "--log-level", "warn", "certs", "init", "--dir", certs, "--hosts", "127.0.0.1"],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT)
    check(made.returncode == 0, f"neardup certs init failed ({made.returncode}):\n{made.stderr}")
    port_file = os.path.join(tmp, "tier1.port")
    with open(os.path.join(tmp, "tier1.log"), "w") as log:
        proc = subprocess.Popen([neardup, "--log-level", "warn", "tier1-server", "--listen", "127.0.0.1:0",
                                 "--store", os.path.join(tmp, "store"), "--map", os.path.join(tmp, "mapstore", "map.pb"),
                                 "--bearer-token-file", token_file, "--tls-dir", certs, "--port-file", port_file],
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        give_up = time.monotonic() + START_TIMEOUT
        while not os.path.exists(port_file):
            check(proc.poll() is None, f"tier1-server exited ({proc.returncode})")
            check(time.monotonic() < give_up, "tier1-server did not listen in time")
            time.sleep(0.05)
        with open(port_file) as f:
            return proc, f"https://127.0.0.1:{f.read().strip()}", os.path.join(certs, "ca.pem")
    except BaseException:
        stop(proc)
        raise


def stop(proc):
    """Ends a process this test started: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_crawl(tmp, name, site_url, service_url, ca_file):
    """Crawls the site in a subprocess through the middleware asking `service_url`: what the spider
    saw (SiteSpider.closed). Its log is tmp/<name>.log."""
    result_file = os.path.join(tmp, f"{name}.json")
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    with open(os.path.join(tmp, f"{name}.log"), "w") as log:
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--crawl", site_url + "/",
                                "--service", service_url, "--ca-file", ca_file, "--result", result_file],
                               stdout=log, stderr=subprocess.STDOUT, env=env, timeout=CRAWL_TIMEOUT)
    check(child.returncode == 0 and os.path.exists(result_file), f"{name} failed ({child.returncode})")
    with open(result_file) as f:
        result = json.load(f)
    check(result["reason"] == "finished", f"{name} ended: {result['reason']}")
    return result


def check_reached(name, result, html_urls, dead_urls):
    """Every page was reached once, kept or dropped; the dead links failed with 404 and their gone
    records were sent (a service that does not take them, 400, counts them in gone_failed)."""
    kept, dropped, stats = set(result["kept"]), set(result["dropped"]), result["stats"]
    check(kept | dropped == html_urls and not kept & dropped,
          f"{name}: not every page was reached once: missing {sorted(html_urls - kept - dropped)}")
    check(result["failed"] == {u: 404 for u in dead_urls}, f"{name}: failures other than the dead links: {result['failed']}")
    check(stats.get("neardup/sent") == len(html_urls), f"{name}: pages sent: {stats}")
    check(stats.get("neardup/dropped", 0) == len(dropped), f"{name}: {len(dropped)} dropped, stats {stats}")
    check(stats.get("neardup/gone", 0) + stats.get("neardup/gone_failed", 0) == len(dead_urls),
          f"{name}: gone records: {stats}")


def run_test(neardup, tmp):
    pages = make_site()
    site = serve(pages)
    site_url = f"http://127.0.0.1:{site.server_address[1]}"
    html_urls = {site_url + p for p in pages}
    dead_urls = {site_url + p for p in DEAD}
    tier1 = None
    try:
        tier1, service_url, ca_file = start_tier1(neardup, tmp, pages, site_url)
        # A client that does not trust the cluster's CA gets no answer from the HTTPS API.
        try:
            no_proxy_opener(None).open(f"{service_url}/healthz", timeout=5)
            raise Failed("the API answered a client that does not trust its CA")
        except urllib.error.URLError as e:
            check(isinstance(e.reason, ssl.SSLCertVerificationError), f"an untrusting client: {e!r}")
        result = run_crawl(tmp, "crawl", site_url, service_url, ca_file)
        check_reached("crawl", result, html_urls, dead_urls)
        stats, kept, dropped = result["stats"], set(result["kept"]), set(result["dropped"])
        check(stats.get("neardup/unavailable", 0) == 0, f"the service did not answer for some pages: {stats}")

        opener = no_proxy_opener(ca_file)
        give_up = time.monotonic() + SETTLE_TIMEOUT
        while True:
            answers = {u: ask(opener, service_url, u)["status"] for u in html_urls | dead_urls}
            if "pending" not in answers.values() or time.monotonic() > give_up:
                break
            time.sleep(0.1)
        duplicates = {u for u, status in answers.items() if status == "duplicate"}
        check(dropped == duplicates, f"dropped but not duplicate: {sorted(dropped - duplicates)}; "
                                     f"duplicate but kept: {sorted(duplicates - dropped)}")
        check(dropped and kept, f"{len(dropped)} dropped, {len(kept)} kept: want some of each")
        print(f"test_e2e: {len(html_urls)} pages, {len(dropped)} dropped as duplicates, {len(kept)} kept, "
              f"{len(dead_urls)} dead links: {json.dumps(stats, sort_keys=True)}")

        # Fail open: with the service stopped, every page is kept and counted unavailable.
        stop(tier1)
        result = run_crawl(tmp, "crawl-unavailable", site_url, service_url, ca_file)
        check_reached("crawl-unavailable", result, html_urls, dead_urls)
        stats = result["stats"]
        check(not result["dropped"] and stats.get("neardup/unavailable") == len(html_urls),
              f"fail open: {len(result['dropped'])} dropped, stats {stats}")
        print(f"test_e2e: the service stopped: {len(html_urls)} pages kept: {json.dumps(stats, sort_keys=True)}")
    finally:
        if tier1 is not None:
            stop(tier1)
        site.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--neardup", help="the neardup binary")
    parser.add_argument("--crawl", metavar="START_URL", help=argparse.SUPPRESS)
    parser.add_argument("--service", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--ca-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crawl:
        crawl(args.crawl, args.service, args.ca_file, args.result)
        return 0
    if not args.neardup:
        parser.error("--neardup is required")
    # SIGTERM (a test runner's timeout) and SIGINT unwind through the `finally`s that end the processes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("test_e2e: terminated"))
    with tempfile.TemporaryDirectory(prefix="neardup-scrapy-") as tmp:
        try:
            run_test(os.path.abspath(args.neardup), tmp)
        except (Failed, subprocess.TimeoutExpired, OSError) as e:
            print(f"test_e2e: FAILED: {e}", file=sys.stderr)
            for log in ("tier1.log", "crawl.log", "crawl-unavailable.log"):
                print(f"--- {log} (end)\n{tail(os.path.join(tmp, log))}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
