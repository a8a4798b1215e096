#!/usr/bin/python3
"""A by-hand check of both example workers, without faultline.

Starts its own redis-server on a free loopback port and a stub payments
server (plus a stub Slack webhook) on 127.0.0.1, pushes jobs whose IDs pick
the stub's answer, runs a worker, and checks what it did:

    /usr/bin/python3 examples/python-fixed/selftest.py   # exits 0 when all checks pass

Job IDs: ok-* 200; decl-* 402 card_error; auth-* 401; flaky-* 503 twice
then 200; hang-* the first call is charged and never answered; slow-* 200
after 1.5s (the worker is killed -9 meanwhile).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = {"naive": os.path.join(HERE, "..", "python-naive", "worker.py"), "fixed": os.path.join(HERE, "worker.py")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stub:
    """The payments stub's log: calls, charges and keys per job, and Slack posts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.calls, self.charges, self.keys, self.seen, self.alerts = {}, {}, {}, set(), []


STUB = Stub()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/slack":
            STUB.alerts.append(json.loads(body)["text"])
            return self.reply(200, {"ok": True})
        job, key = self.headers.get("X-Faultline-Job", ""), self.headers.get("Idempotency-Key", "")
        with STUB.lock:
            n = STUB.calls[job] = STUB.calls.get(job, 0) + 1
            STUB.keys.setdefault(job, []).append(key)
        if job.startswith("decl-"):
            return self.reply(402, {"error": {"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"}})
        if job.startswith("auth-"):
            return self.reply(401, {"error": "API key revoked or expired"})
        if job.startswith("flaky-") and n <= 2:
            return self.reply(503, {"error": "unavailable"})
        with STUB.lock:  # the charge takes effect; a repeated key is a replay
            if not key or key not in STUB.seen:
                STUB.seen.add(key) if key else None
                STUB.charges[job] = STUB.charges.get(job, 0) + 1
        if job.startswith("hang-") and n == 1:
            time.sleep(3)  # charged, never answered: the client's 2s timeout fires
            return
        if job.startswith("slow-"):
            time.sleep(1.5)
        self.reply(200, {"id": "ch_" + job, "status": "succeeded"})


failures = []


def check(what, ok):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def job(jid, key=""):
    return json.dumps({"id": jid, "task": "charge", "payload": "", "idempotency_key": key})


def entries(r, key):
    return [json.loads(e) for e in r.lrange(key, 0, -1)]


def main():
    rport, hport = free_port(), free_port()
    rs = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                          stdout=subprocess.DEVNULL)
    srv = ThreadingHTTPServer(("127.0.0.1", hport), Handler)
    srv.handle_error = lambda *_: None  # a killed worker's broken pipe is expected
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    procs = []
    try:
        r = redis.Redis(port=rport)
        for _ in range(50):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        env = dict(os.environ, REDIS_URL=f"redis://127.0.0.1:{rport}/0", QUEUE_KEY="ns:default", DLQ_KEY="ns:dead_letter",
                   PAYMENT_URL=f"http://127.0.0.1:{hport}/call", SLACK_WEBHOOK_URL=f"http://127.0.0.1:{hport}/slack",
                   FAULTLINE_WORKER="w1", DLQ_MAX="5")

        def start(kind):
            p = subprocess.Popen(["/usr/bin/python3", "-u", WORKERS[kind]], env=env, stdout=subprocess.DEVNULL)
            procs.append(p)
            return p

        def wait_until(cond, timeout):
            end = time.time() + timeout
            while time.time() < end and not cond():
                time.sleep(0.1)
            return cond()

        for kind in ("naive", "fixed"):
            print(f"--- {kind}", flush=True)
            r.flushdb()
            STUB.reset()
            jobs = ["ok-1", "ok-2", "decl-1", "auth-1", "auth-2", "flaky-1", "hang-1"] + [f"decl-x{i}" for i in range(6)]
            for j in jobs:
                r.lpush("ns:default", job(j, "key-" + j if j == "ok-2" else ""))
            p = start(kind)
            done = lambda: r.llen("ns:default") == 0 and r.llen("ns:default:processing:w1") == 0 and (
                len(STUB.charges) + r.llen("ns:dead_letter") >= len(jobs) - (6 if kind == "naive" else 0))
            wait_until(done, 25)
            time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            dlq = entries(r, "ns:dead_letter")
            ids = [e["job"]["id"] for e in dlq]
            if kind == "naive":
                check("naive: the DLQ was trimmed to DLQ_MAX=5 (dead letters dropped)", len(dlq) == 5)
                check("naive: a declined card was called 4 times", STUB.calls.get("decl-1") == 4)
                check("naive: a 401 was called 4 times", STUB.calls.get("auth-1") == 4)
                check("naive: no page", STUB.alerts == [])
                check("naive: a timed-out charge was charged twice", STUB.charges.get("hang-1") == 2)
                check("naive: no Idempotency-Key sent", all(k == "" for ks in STUB.keys.values() for k in ks))
            else:
                by_id = {e["job"]["id"]: e for e in dlq}
                check("fixed: every decline and 401 dead-lettered, nothing trimmed", len(dlq) == 9 and sorted(ids) == sorted(
                    ["decl-1", "auth-1", "auth-2"] + [f"decl-x{i}" for i in range(6)]))
                check("fixed: a decline is called once, low/permanent",
                      STUB.calls.get("decl-1") == 1 and by_id["decl-1"]["severity"] == "low" and by_id["decl-1"]["type"] == "permanent")
                check("fixed: a 401 is called once, high/critical", STUB.calls.get("auth-1") == 1 and STUB.calls.get("auth-2") == 1
                      and by_id["auth-1"]["severity"] == "high" and by_id["auth-1"]["type"] == "critical")
                check("fixed: one page for two 401s", len(STUB.alerts) == 1)
                check("fixed: a 503 is retried until it succeeds", STUB.calls.get("flaky-1") == 3 and "flaky-1" not in ids)
                check("fixed: a timed-out charge is charged once", STUB.charges.get("hang-1") == 1 and STUB.calls.get("hang-1") == 2)
                check("fixed: the job's key is sent, else its id",
                      set(STUB.keys["ok-2"]) == {"key-ok-2"} and set(STUB.keys["ok-1"]) == {"ok-1"})
                check("fixed: the processing list is empty", r.llen("ns:default:processing:w1") == 0)

            # kill -9 in the middle of a charge
            r.lpush("ns:default", job("slow-1"))
            p = start(kind)
            wait_until(lambda: STUB.calls.get("slow-1"), 10)
            p.kill()
            p.wait()
            held = r.lrange("ns:default:processing:w1", 0, -1)
            if kind == "naive":
                check("naive: the killed worker's job is gone from Redis", r.llen("ns:default") == 0 and not held and
                      "slow-1" not in [e["job"]["id"] for e in entries(r, "ns:dead_letter")])
                continue
            check("fixed: the killed worker's job is in its processing list", len(held) == 1 and json.loads(held[0])["id"] == "slow-1")
            p = start(kind)
            wait_until(lambda: STUB.calls.get("slow-1", 0) >= 2 and r.llen("ns:default:processing:w1") == 0, 10)
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            check("fixed: the restarted worker ran it again, charged once",
                  STUB.calls.get("slow-1") == 2 and STUB.charges.get("slow-1") == 1 and r.llen("ns:default:processing:w1") == 0)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        srv.shutdown()
        rs.terminate()
        rs.wait()
    print("PASS" if not failures else f"FAIL: {len(failures)} check(s)", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
