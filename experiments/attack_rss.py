#!/usr/bin/env python3
"""Resident memory of neardup's servers under memory attacks, on loopback.

Starts a fresh server for each attack (on 127.0.0.1, port 0), measures its resident memory from
/proc/PID/status before the attack, at its peak during the attack (VmHWM, reset just before the
attack through /proc/PID/clear_refs, and VmRSS sampled every 10 ms), and after the attacking
connections closed, and prints one row per attack with what the server answered or did.

  Tier 2 frames (neardup tier2-server, plain TCP: loopback only):
    t2-oversize   3 connections each announce a 300 MiB request and send its bytes: refused on the
                  header (over tier2_server.max_request_bytes, 256 MiB by default).
    t2-inflight   3 connections each announce 250 MiB (under the cap) and send it concurrently:
                  two fit tier2_server.max_inflight_bytes (512 MiB by default), the third is refused
                  on its header; the two bodies are garbage, refused once read.
    t2-inflight-again     the same again on the same server: what stayed held after the first
                  round must be reused, not grow.
    t2-inflight-decommit  the same on a fresh server run with TCMALLOC_AGGRESSIVE_DECOMMIT=true
                  (tcmalloc returns freed spans to the system at once): what stays held otherwise
                  is the allocator's cache, and this server must be back to its RSS before.
  The crawlers' HTTP API (neardup tier1-server with a bearer token, plain HTTP on loopback):
    t1-bigpost    20 concurrent POST /v1/pages announcing and sending a 30 MB body with no token:
                  refused 401 on the header, the body never read.
    t1-groups     1,030 GET /v1/groups/99999999999999999999, each on its own connection (past
                  tier1_server.max_connections, 1024): then GET /healthz must answer 200 and
                  neardup_http_connections_open must be back to 1 (the scrape itself).
    t1-slowloris  40 connections send half a request header and go silent: each must be closed
                  within tier1_server.read_timeout_ms (10 s by default).

Every attack is bounded in time and in bytes, every connection goes to 127.0.0.1, and every server
started is stopped (SIGTERM, then SIGKILL) on every way out, including failures and signals; a
server also gets SIGKILL should this script die without cleaning up.

Usage (from the repository's root):
  python3 experiments/attack_rss.py --neardup build/bin/neardup

Exit status: 0 when every attack met its expectation (column "check"), 1 otherwise, 2 on an error.
Runs in about half a minute.
"""

import argparse
import concurrent.futures
import ctypes
import http.client
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
MIB = 1 << 20

# Defaults the attacks are sized against (proto/config.proto).
T2_MAX_REQUEST_BYTES = 256 * MIB
T2_MAX_INFLIGHT_BYTES = 512 * MIB
T1_MAX_BODY_BYTES = 32 * MIB
T1_READ_TIMEOUT_S = 10.0

T2_OVERSIZE_BYTES = 300 * MIB  # over the request cap
T2_INFLIGHT_BYTES = 250 * MIB  # under it; two fit the in-flight cap, three do not
T1_POST_BYTES = 30_000_000     # under the server's body cap: only the missing token refuses it
assert T2_OVERSIZE_BYTES > T2_MAX_REQUEST_BYTES >= T2_INFLIGHT_BYTES
assert 2 * T2_INFLIGHT_BYTES <= T2_MAX_INFLIGHT_BYTES < 3 * T2_INFLIGHT_BYTES
assert T1_POST_BYTES <= T1_MAX_BODY_BYTES

# Frames (cluster/tier2_server/frame.h): magic "ND", version, type, flags (u16 each), body length (u32), big-endian.
FRAME_MAGIC = b"ND"
FRAME_VERSION = 1
FRAME_TIER2_REQUEST = 1

# Growth of RSS taken as memory held (rather than noise: thread stacks, caches).
HELD_KIB = 32 * 1024

CHUNK = b"\xff" * MIB  # garbage: not a valid pb::Tier2Request, nor anything a server should keep
MAX_REPLY_BYTES = 64 << 10


def frame_header(length):
    return FRAME_MAGIC + struct.pack(">HHHI", FRAME_VERSION, FRAME_TIER2_REQUEST, 0, length)


# ---------------------------------------------------------------------------------------------
# Processes


def _die_with_parent():
    # PR_SET_PDEATHSIG: the server gets SIGKILL if this script dies without stopping it.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


class Servers:
    """The servers this script started; stop_all() on every way out."""

    def __init__(self):
        self.procs = []

    def start(self, argv, log_path, port_file, env=None, timeout_s=20.0):
        with open(log_path, "wb") as log:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 env=env, preexec_fn=_die_with_parent)
        self.procs.append(p)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if p.poll() is not None:
                raise RuntimeError(f"{argv[1]} exited with {p.returncode}:\n{tail(log_path)}")
            try:
                with open(port_file) as f:
                    port = int(f.read().strip())
                if port > 0:
                    return p, port
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{argv[1]} wrote no port in {timeout_s:.0f} s:\n{tail(log_path)}")

    def stop(self, p, timeout_s=15.0):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.procs:
            self.procs.remove(p)
        return p.returncode

    def stop_all(self):
        for p in list(self.procs):
            try:
                self.stop(p)
            except Exception:
                pass


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# Memory


def status_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0])
    if len(out) < 2:
        raise RuntimeError(f"server {pid} is gone (it exited or was killed) during an attack")
    return out


def reset_hwm(pid):
    """Resets VmHWM to the current RSS (Linux 4.0 and later); False where that is not allowed."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Sampler:
    """VmRSS every 10 ms while an attack runs; the max seen."""

    def __init__(self, pid):
        self.pid = pid
        self.max_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.max_kib = max(self.max_kib, status_kib(self.pid)["VmRSS"])
            except (OSError, RuntimeError):
                return
            self._stop.wait(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(2)


def mib(kib):
    return f"{kib / 1024:.1f}"


# ---------------------------------------------------------------------------------------------
# Connections


def server_connections(pid, port):
    """The server's own TCP connections on `port` (not its listening socket, not TIME_WAIT)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return 0
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) < 10:
                continue
            if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] != "0A" and cols[9] in inodes:
                n += 1
    return n


def wait_until(predicate, timeout_s, step_s=0.05):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step_s)
    return predicate()


def http_status(reply):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", reply)
    return int(m.group(1)) if m else None


def http_complete(reply):
    end = reply.find(b"\r\n\r\n")
    if end < 0:
        return False
    m = re.search(rb"\r\ncontent-length:\s*(\d+)", reply[:end], re.I)
    return m is None or len(reply) - end - 4 >= int(m.group(1))


def stream(port, head, body_bytes, deadline_s, pause_after_head=None, http_reply=False):
    """Sends `head`, then `body_bytes` of garbage, to HOST:port, reading what comes back, until the
    server closes or resets the connection, the deadline passes, or (http_reply) the body was sent
    and an HTTP answer came. Never more than len(head) + body_bytes bytes, never past the deadline.

    pause_after_head: a threading.Barrier to wait at (then 0.3 s) between the head and the body."""
    r = {"body_sent": 0, "reply": b"", "ended": "", "seconds": 0.0}
    t0 = time.monotonic()
    end = t0 + deadline_s
    try:
        s = socket.create_connection((HOST, port), timeout=5)
    except OSError as e:
        r["ended"] = f"connect failed: {e}"
        return r
    try:
        s.sendall(head)
        if pause_after_head is not None:
            try:
                pause_after_head.wait(max(0.1, end - time.monotonic()))
            except threading.BrokenBarrierError:
                pass
            time.sleep(0.3)
        s.setblocking(False)
        chunk = memoryview(CHUNK)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                r["ended"] = "deadline"
                break
            sending = r["body_sent"] < body_bytes
            readable, writable, _ = select.select([s], [s] if sending else [], [], min(0.5, left))
            if readable:
                try:
                    data = s.recv(65536)
                except ConnectionResetError:
                    r["ended"] = "reset"
                    break
                if not data:
                    r["ended"] = "closed"
                    break
                if len(r["reply"]) < MAX_REPLY_BYTES:
                    r["reply"] += data[: MAX_REPLY_BYTES - len(r["reply"])]
                if http_reply and not sending and http_complete(r["reply"]):
                    r["ended"] = "answered"
                    break
            if writable and sending:
                try:
                    r["body_sent"] += s.send(chunk[: min(len(chunk), body_bytes - r["body_sent"])])
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    r["ended"] = "reset"
                    break
    finally:
        s.close()
        r["seconds"] = time.monotonic() - t0
    return r


def run_parallel(n, fn):
    """fn(i) for i in range(n), each on a thread of its own; their results in order."""
    results = [None] * n

    def one(i):
        try:
            results[i] = fn(i)
        except Exception as e:  # reported as a connection that failed
            results[i] = {"ended": f"error: {e}", "body_sent": 0, "reply": b"", "seconds": 0.0}

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def http_get(port, path, timeout_s=5.0):
    c = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        c.request("GET", path)
        resp = c.getresponse()
        return resp.status, resp.read(1 << 20)
    finally:
        c.close()


def open_connections_metric(port, settle_s=3.0):
    """neardup_http_connections_open; the connections of the requests just made may take a moment
    to close on the server's side: read again (for up to settle_s) until it says 1, the scrape."""
    end = time.monotonic() + settle_s
    while True:
        status, body = http_get(port, "/metrics")
        m = re.search(rb"^neardup_http_connections_open (\d+)", body, re.M) if status == 200 else None
        value = int(m.group(1)) if m else None
        if value == 1 or time.monotonic() >= end:
            return value
        time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# One attack on a fresh server


class Measured:
    """Before: RSS of the idle server; during: the attack's peak; after: once the server's
    connections closed (and a second to settle)."""

    def __init__(self, pid, port):
        self.pid, self.port = pid, port
        self.before = self.peak = self.after = 0
        self.closed = True

    def __enter__(self):
        time.sleep(0.3)
        self.before = status_kib(self.pid)["VmRSS"]
        self.hwm_reset = reset_hwm(self.pid)
        self.sampler = Sampler(self.pid).__enter__()
        return self

    def __exit__(self, *exc):
        self.closed = wait_until(lambda: server_connections(self.pid, self.port) == 0, 15)
        self.sampler.__exit__()
        self.peak = max(self.sampler.max_kib, status_kib(self.pid)["VmHWM"])
        time.sleep(1.0)
        self.after = status_kib(self.pid)["VmRSS"]


def describe_ends(results):
    counts = {}
    for r in results:
        counts[r["ended"]] = counts.get(r["ended"], 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def t2_oversize(servers, neardup, work):
    p, port = start_tier2(servers, neardup, work, "t2a")
    announced = T2_OVERSIZE_BYTES
    with Measured(p.pid, port) as m:
        results = run_parallel(3, lambda i: stream(port, frame_header(announced), announced, 20))
    log = read_log(os.path.join(work, "t2a.log"))
    sent = sum(r["body_sent"] for r in results)
    refused_logged = log.count("over tier2_server.max_request_bytes")
    alive = p.poll() is None
    rc = servers.stop(p)
    ok = (alive and m.closed and all(r["ended"] in ("reset", "closed") for r in results)
          and sent < 3 * 64 * MIB and refused_logged == 3 and m.peak - m.before < HELD_KIB)
    what = (f"3 x {announced / MIB:.0f} MiB announced: {describe_ends(results)} by the server after "
            f"{sent / MIB:.1f} MiB sent in all; log: {refused_logged} x over max_request_bytes; "
            f"stopped rc {rc}")
    return [("t2-oversize", "tier2-server", m, ok, what)]


def read_log(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def start_tier2(servers, neardup, work, name, env=None):
    store = os.path.join(work, f"{name}.store")
    os.mkdir(store)
    port_file = os.path.join(work, f"{name}.port")
    return servers.start([neardup, "tier2-server", "--store", store, "--listen", f"{HOST}:0",
                          "--port-file", port_file], os.path.join(work, f"{name}.log"), port_file, env=env)


def t2_inflight_round(p, port, log_path):
    """3 x 250 MiB announced at once, then sent concurrently: (measured, ok, what)."""
    announced = T2_INFLIGHT_BYTES
    barrier = threading.Barrier(3)
    log_before = len(read_log(log_path))
    with Measured(p.pid, port) as m:
        results = run_parallel(3, lambda i: stream(port, frame_header(announced), announced, 60,
                                                   pause_after_head=barrier))
    log = read_log(log_path)[log_before:]
    full = [r for r in results if r["body_sent"] == announced]
    refused = [r for r in results if r["body_sent"] < announced]
    inflight_logged = log.count("would pass tier2_server.max_inflight_bytes")
    parse_logged = log.count("the body is not a valid")
    ok = (p.poll() is None and m.closed and len(full) == 2 and len(refused) == 1 and inflight_logged == 1
          and parse_logged == 2 and all(r["ended"] in ("reset", "closed") for r in results))
    refused_sent = sum(r["body_sent"] for r in refused)
    what = (f"{len(full)} x {announced / MIB:.0f} MiB read in full, then closed (log: {parse_logged} x body not a valid "
            f"request); {len(refused)} refused on the header, {refused_sent / MIB:.1f} MiB of its body sent "
            f"(log: {inflight_logged} x would pass max_inflight_bytes); "
            f"{max(r['seconds'] for r in results):.1f} s")
    return m, ok, what


def held_text(m):
    held = m.after - m.before
    return (f"after close {held / 1024:+.1f} MiB vs before" if held >= HELD_KIB
            else "memory returned after close")


def t2_inflight(servers, neardup, work):
    """Two rounds on one server (is what stays held reused, or does it grow?), then a round on a
    server whose tcmalloc returns freed spans at once (is what stays held the allocator's cache?)."""
    rows = []
    p, port = start_tier2(servers, neardup, work, "t2b")
    log_path = os.path.join(work, "t2b.log")
    m1, ok1, what1 = t2_inflight_round(p, port, log_path)
    # The server holds what the two bodies sent, not more (no copies as a body grows), and gives
    # it back once they are answered.
    ok1 = ok1 and m1.peak - m1.before <= 2 * T2_INFLIGHT_BYTES // 1024 + HELD_KIB and m1.after - m1.before < HELD_KIB
    rows.append(("t2-inflight", "tier2-server", m1, ok1, f"{what1}; {held_text(m1)}"))
    m2, ok2, what2 = t2_inflight_round(p, port, log_path)
    grew = m2.after - m1.after
    ok2 = ok2 and grew < HELD_KIB
    rc = servers.stop(p)
    rows.append(("t2-inflight-again", "tier2-server", m2, ok2,
                 f"same server, round 2: {what2}; after close {grew / 1024:+.1f} MiB vs round 1; stopped rc {rc}"))
    env = dict(os.environ, TCMALLOC_AGGRESSIVE_DECOMMIT="true")
    p, port = start_tier2(servers, neardup, work, "t2c", env=env)
    m3, ok3, what3 = t2_inflight_round(p, port, os.path.join(work, "t2c.log"))
    ok3 = ok3 and m3.after - m3.before < HELD_KIB
    rc = servers.stop(p)
    rows.append(("t2-inflight-decommit", "tier2-server", m3, ok3,
                 f"TCMALLOC_AGGRESSIVE_DECOMMIT=true: {what3}; {held_text(m3)}; stopped rc {rc}"))
    return rows


def start_tier1(servers, neardup, work, name, map_pb, token_file):
    port_file = os.path.join(work, f"{name}.port")
    return servers.start([neardup, "tier1-server", "--listen", f"{HOST}:0",
                          "--store", os.path.join(work, f"{name}.store"), "--map", map_pb,
                          "--bearer-token-file", token_file, "--port-file", port_file],
                         os.path.join(work, f"{name}.log"), port_file)


def t1_bigpost(servers, neardup, work, map_pb, token_file):
    p, port = start_tier1(servers, neardup, work, "t1a", map_pb, token_file)
    http_get(port, "/healthz")
    body = T1_POST_BYTES
    head = (f"POST /v1/pages HTTP/1.1\r\nHost: {HOST}:{port}\r\nContent-Type: application/x-ndjson\r\n"
            f"Content-Length: {body}\r\n\r\n").encode()
    with Measured(p.pid, port) as m:
        results = run_parallel(20, lambda i: stream(port, head, body, 20, http_reply=True))
    codes = {}
    for r in results:
        code = http_status(r["reply"])
        codes[code] = codes.get(code, 0) + 1
    sent = sum(r["body_sent"] for r in results)
    health = http_get(port, "/healthz")[0]
    alive = p.poll() is None
    rc = servers.stop(p)
    ok = (alive and m.closed and codes == {401: 20} and health == 200
          and sent < 20 * 16 * MIB and m.peak - m.before < HELD_KIB)
    what = (f"answers {codes_text(codes)}; connections {describe_ends(results)} after "
            f"{sent / MIB:.1f} MiB of {20 * body / MIB:.1f} MiB sent in all; /healthz {health}; stopped rc {rc}")
    return [("t1-bigpost", "tier1-server", m, ok, what)]


def codes_text(codes):
    return ", ".join(f"{n} x {c if c is not None else 'none'}" for c, n in sorted(codes.items(), key=lambda kv: str(kv[0])))


def t1_groups(servers, neardup, work, map_pb, token_file):
    p, port = start_tier1(servers, neardup, work, "t1b", map_pb, token_file)
    http_get(port, "/healthz")
    n = 1030

    def one(_):
        try:
            return http_get(port, "/v1/groups/99999999999999999999")[0]
        except (OSError, http.client.HTTPException) as e:
            return type(e).__name__

    with Measured(p.pid, port) as m:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(one, range(n)))
    codes = {}
    for s in statuses:
        codes[s] = codes.get(s, 0) + 1
    health = http_get(port, "/healthz")[0]
    open_now = open_connections_metric(port)
    alive = p.poll() is None
    rc = servers.stop(p)
    ok = alive and m.closed and codes == {400: n} and health == 200 and open_now == 1
    what = (f"{n} answers {codes_text(codes)}; then /healthz {health}, "
            f"neardup_http_connections_open {open_now} (the scrape itself); stopped rc {rc}")
    return [("t1-groups", "tier1-server", m, ok, what)]


def t1_slowloris(servers, neardup, work, map_pb, token_file):
    p, port = start_tier1(servers, neardup, work, "t1c", map_pb, token_file)
    http_get(port, "/healthz")
    n = 40
    half = f"GET /healthz HTTP/1.1\r\nHost: {HOST}:{port}\r\nUser-Agent: slow\r\nX-Pad: ".encode()
    closed_after = [None] * n
    during = {}

    def hold():
        socks = []
        try:
            for i in range(n):
                s = socket.create_connection((HOST, port), timeout=5)
                s.sendall(half)
                s.setblocking(False)
                socks.append((s, time.monotonic(), i))
            end = time.monotonic() + T1_READ_TIMEOUT_S + 5
            live = list(socks)
            while live and time.monotonic() < end:
                readable, _, _ = select.select([s for s, _, _ in live], [], [], 0.2)
                for s in readable:
                    for entry in live:
                        if entry[0] is s:
                            try:
                                data = s.recv(4096)
                            except ConnectionResetError:
                                data = b""
                            if not data:
                                closed_after[entry[2]] = time.monotonic() - entry[1]
                                live.remove(entry)
                            break
        finally:
            for s, _, _ in socks:
                s.close()

    with Measured(p.pid, port) as m:
        t = threading.Thread(target=hold, daemon=True)
        t.start()
        time.sleep(2.0)
        during["health"] = http_get(port, "/healthz")[0]
        during["open"] = open_connections_metric(port, settle_s=0)
        t.join(T1_READ_TIMEOUT_S + 10)
    times = [c for c in closed_after if c is not None]
    health = http_get(port, "/healthz")[0]
    open_now = open_connections_metric(port)
    alive = p.poll() is None
    rc = servers.stop(p)
    ok = (alive and m.closed and len(times) == n and max(times) <= T1_READ_TIMEOUT_S + 1.5
          and during["health"] == 200 and health == 200 and open_now == 1)
    span = f"{min(times):.2f}..{max(times):.2f} s" if times else "none"
    what = (f"{len(times)}/{n} closed by the server after {span}; during: /healthz {during['health']}, "
            f"connections_open {during['open']}; after: /healthz {health}, connections_open {open_now}; "
            f"stopped rc {rc}")
    return [("t1-slowloris", "tier1-server", m, ok, what)]


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--neardup", required=True, help="the neardup binary")
    ap.add_argument("--crawl", default="data/sample-crawl.jsonl", help="crawl to build the partition map from")
    args = ap.parse_args()
    neardup = os.path.abspath(args.neardup)

    def on_signal(sig, _frame):
        raise SystemExit(128 + sig)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    servers = Servers()
    work = tempfile.mkdtemp(prefix="attack-rss-")
    rows = []
    try:
        map_pb = os.path.join(work, "map.pb")
        subprocess.run([neardup, "partition", "build", "--input", args.crawl, "--shards", "2", "--out", map_pb,
                        "--report", "/dev/null"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
        token_file = os.path.join(work, "token")
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(24).hex() + "\n")

        attacks = [
            lambda: t2_oversize(servers, neardup, work),
            lambda: t2_inflight(servers, neardup, work),
            lambda: t1_bigpost(servers, neardup, work, map_pb, token_file),
            lambda: t1_groups(servers, neardup, work, map_pb, token_file),
            lambda: t1_slowloris(servers, neardup, work, map_pb, token_file),
        ]
        t0 = time.monotonic()
        hwm = True
        for attack in attacks:
            for name, server, m, ok, what in attack():
                hwm = hwm and m.hwm_reset
                rows.append((name, server, mib(m.before), mib(m.peak), mib(m.after), "ok" if ok else "UNEXPECTED",
                             what))
            servers.stop_all()

        head = ("attack", "server", "RSS before MiB", "peak MiB", "after close MiB", "check", "what the server did")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(6)]
        print("  ".join(h.ljust(w) if i < 2 or i == 5 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))
              + "  " + head[6])
        for r in rows:
            print("  ".join(c.ljust(w) if i < 2 or i == 5 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                  + "  " + r[6])
        print(f"# peak: max of VmHWM ({'reset before each attack' if hwm else 'since start: clear_refs refused'}) "
              f"and VmRSS sampled every 10 ms; after: 1 s after the server's last connection closed; "
              f"{time.monotonic() - t0:.0f} s")
        return 0 if all(r[5] == "ok" for r in rows) else 1
    except Exception as e:
        print(f"attack_rss: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attack_rss: interrupted; servers stopped", file=sys.stderr)
        return 130
    finally:
        servers.stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
