#!/usr/bin/env python3
"""A small worker on one of four queue layouts, for the drill's layout specs.

LAYOUT is list (BRPOP), stream (a consumer group: XREADGROUP, XACK), hash
(jobs kept under their ID, their "status" marked in place) or zset (ZPOPMIN).
Each job is one POST to PAYMENT_URL with X-Faultline-Job; a failed call is
retried twice after 200 ms (a 401 or 403 never), then the job goes to
DLQ_KEY in the seed's format. DROP_EVERY=k drops every k-th job it takes:
taken off the queue (or acknowledged, or marked taken), never run, never
dead-lettered -- lost. A 401 or 403 is paged to PAGE_URL as plain text,
PAGE_DELAY seconds later (a batching alerter), and every dead letter is
noted to CHAT_URL at once, in plain text with no severity. With READY_KEY,
the worker sets that key READY_DELAY seconds after it starts, and takes no
job before.
"""
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

import redis

LAYOUT = os.environ["LAYOUT"]
QUEUE_KEY = os.environ["QUEUE_KEY"]
DLQ_KEY = os.environ["DLQ_KEY"]
GROUP = os.environ.get("GROUP", "workers")
PAYMENT_URL = os.environ["PAYMENT_URL"]
DROP_EVERY = int(os.environ.get("DROP_EVERY", "0"))
WORKER = os.environ.get("FAULTLINE_WORKER") or "w1"
PAGE_URL = os.environ.get("PAGE_URL", "")
PAGE_DELAY = float(os.environ.get("PAGE_DELAY", "0"))
CHAT_URL = os.environ.get("CHAT_URL", "")
READY_KEY = os.environ.get("READY_KEY", "")
READY_DELAY = float(os.environ.get("READY_DELAY", "0"))

r = redis.Redis.from_url(os.environ["REDIS_URL"])
stopping = False
taken = 0


def call(job):
    req = urllib.request.Request(
        PAYMENT_URL, data=json.dumps({"job": job["id"]}).encode(),
        headers={"Content-Type": "application/json", "X-Faultline-Job": job["id"]}, method="POST")
    with urllib.request.urlopen(req, timeout=2) as resp:
        resp.read()


def post(url, text):
    req = urllib.request.Request(url, data=json.dumps({"text": text}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=2) as resp:
        resp.read()


def run(job):
    """Runs a job; returns True when it succeeded, False when dead-lettered."""
    error = ""
    for attempt in range(3):
        try:
            call(job)
            return True
        except urllib.error.HTTPError as e:
            error = f"HTTP {e.code}"
            if e.code in (401, 403):
                if PAGE_URL:
                    t = threading.Timer(PAGE_DELAY, post, (PAGE_URL, f"[high] {error} from the API (job {job['id']})"))
                    t.daemon = True
                    t.start()
                break
            time.sleep(0.2)
        except (urllib.error.URLError, OSError) as e:
            error = str(e)
            time.sleep(0.2)
    if CHAT_URL:
        post(CHAT_URL, f"job {job['id']} dead-lettered: {error}")
    entry = {"job": job, "error": error, "retries": attempt, "status": "failed",
             "failed_at": datetime.now(timezone.utc).isoformat()}
    r.lpush(DLQ_KEY, json.dumps(entry))
    return False


def drop():
    global taken
    taken += 1
    return DROP_EVERY > 0 and taken % DROP_EVERY == 0


def step():
    """Takes and handles one job; False when there was none."""
    if LAYOUT == "list":
        got = r.brpop(QUEUE_KEY, timeout=0.2)
        if got is None:
            return False
        job = json.loads(got[1])
        if drop():
            print(f"dropped {job['id']}", flush=True)
            return True
        run(job)
        return True
    if LAYOUT == "stream":
        got = r.xreadgroup(GROUP, WORKER, {QUEUE_KEY: ">"}, count=1, block=200)
        if not got or not got[0][1]:
            return False
        msg_id, fields = got[0][1][0]
        job = json.loads(fields[b"job"])
        if not drop():
            run(job)
        else:
            print(f"dropped {job['id']}", flush=True)
        r.xack(QUEUE_KEY, GROUP, msg_id)
        return True
    if LAYOUT == "hash":
        for jid, raw in sorted(r.hgetall(QUEUE_KEY).items()):
            job = json.loads(raw)
            if job.get("status") != "queued":
                continue
            if drop():
                job["status"] = "taken"
                r.hset(QUEUE_KEY, jid, json.dumps(job))
                print(f"dropped {job['id']}", flush=True)
                return True
            job["status"] = "running"
            r.hset(QUEUE_KEY, jid, json.dumps(job))
            job["status"] = "done" if run(job) else "failed"
            r.hset(QUEUE_KEY, jid, json.dumps(job))
            return True
        time.sleep(0.05)
        return False
    if LAYOUT == "zset":
        got = r.zpopmin(QUEUE_KEY)
        if not got:
            time.sleep(0.05)
            return False
        job = json.loads(got[0][0])
        if drop():
            print(f"dropped {job['id']}", flush=True)
            return True
        run(job)
        return True
    raise SystemExit(f"LAYOUT {LAYOUT!r}: takes list, stream, hash or zset")


def stop(*_):
    global stopping
    stopping = True


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if LAYOUT == "stream":
        try:
            r.xgroup_create(QUEUE_KEY, GROUP, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise
    if READY_KEY:
        time.sleep(READY_DELAY)  # a slow start: caches, connections, migrations
        r.set(READY_KEY, "1")
    print(f"worker {WORKER} on {LAYOUT} {QUEUE_KEY}", flush=True)
    while not stopping:
        step()


if __name__ == "__main__":
    main()
