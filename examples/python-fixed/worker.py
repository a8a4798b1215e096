#!/usr/bin/env python3
"""The seed tutorial's payment worker, done right (compare examples/python-naive).

Each "FIX" comment names the failure it prevents; the drill in drill.yaml
checks every one of them from outside.

Environment: REDIS_URL, QUEUE_KEY (default "default"), DLQ_KEY (default
"dead_letter"), PAYMENT_URL, SLACK_WEBHOOK_URL, FAULTLINE_WORKER (this
copy's name, default "w1": it names the processing list, so a restarted
copy must keep its name).
"""
import http.client
import json
import os
import random
import signal
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

import redis

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE_KEY = os.environ.get("QUEUE_KEY", "default")
DLQ_KEY = os.environ.get("DLQ_KEY", "dead_letter")
PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
SLACK_WEBHOOK_URL = os.environ.get("SLACK_WEBHOOK_URL", "")
WORKER = os.environ.get("FAULTLINE_WORKER") or "w1"
PROCESSING = f"{QUEUE_KEY}:processing:{WORKER}"

HTTP_TIMEOUT = 2.0
MAX_ATTEMPTS = 8  # the first attempt included
BASE_DELAY, MAX_DELAY = 0.2, 5.0
PAGE_EVERY = 60  # seconds: one page per error kind per minute, shared by all copies

TRANSIENT, PERMANENT, CRITICAL = "transient", "permanent", "critical"
SEVERITY = {PERMANENT: "low", TRANSIENT: "medium", CRITICAL: "high"}

r = redis.Redis.from_url(REDIS_URL)
stopping = False


class Failure(Exception):
    """A failed call, classified: kind is TRANSIENT, PERMANENT or CRITICAL."""

    def __init__(self, kind, message, page_as="", retry_after=None):
        super().__init__(message)
        self.kind, self.page_as, self.retry_after = kind, page_as, retry_after


def classify(status, body, retry_after):
    # FIX: the seed retries everything. A declined card or a revoked key
    # fails the same way every time; retrying a decline can charge twice
    # and hammers the issuer, retrying a 401 only hides an incident.
    text = body.decode("utf-8", "replace")[:300]
    if status == 402:
        try:
            code = json.loads(text)["error"].get("decline_code", "card_declined")
        except (ValueError, KeyError, TypeError, AttributeError):
            code = "card_declined"
        return Failure(PERMANENT, f"card declined: {code}")
    if status in (401, 403):
        return Failure(CRITICAL, f"HTTP {status}: {text}", page_as=f"http-{status}")
    if status in (408, 429) or status >= 500:
        try:
            hint = float(retry_after) if retry_after else None
        except ValueError:
            hint = None
        return Failure(TRANSIENT, f"HTTP {status}: {text}", retry_after=hint)
    return Failure(PERMANENT, f"HTTP {status}: {text}")


def charge(job):
    # FIX: the Idempotency-Key makes a retry of a charge that went through
    # (a timeout, a 502 after the fact) a replay, not a second charge.
    key = job.get("idempotency_key") or job["id"]
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps({"job": job["id"], "idempotencyKey": key}).encode(),
        headers={"Content-Type": "application/json", "X-Faultline-Job": job["id"], "Idempotency-Key": key},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        raise classify(e.code, e.read(), e.headers.get("Retry-After")) from e
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:  # timeouts, refused, reset
        raise Failure(TRANSIENT, f"{type(e).__name__}: {e}") from e


def backoff(attempt, hint):
    # FIX: capped exponential backoff with jitter instead of three retries
    # at once, so a few seconds' outage is waited out, not dead-lettered.
    delay = min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1))
    delay = random.uniform(delay / 2, delay)
    if hint:
        delay = max(delay, min(hint, MAX_DELAY))  # the dependency's Retry-After, capped
    return delay


def page(failure, job):
    # FIX: a critical failure reaches a person (the seed only prints) --
    # once per error kind per PAGE_EVERY, whichever copy sees it first.
    text = f"[high] {failure.page_as} on payments (job {job.get('id')}): {failure}"
    print(f"ALERT {text}", flush=True)
    dedup = f"{QUEUE_KEY}:paged:{failure.page_as}"
    if not SLACK_WEBHOOK_URL or not r.set(dedup, WORKER, nx=True, ex=PAGE_EVERY):
        return
    req = urllib.request.Request(
        SLACK_WEBHOOK_URL, data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
            resp.read()
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:
        r.delete(dedup)  # not delivered: let the next occurrence page
        print(f"page failed: {e}", flush=True)


def dead_letter(raw, job, failure, retries):
    entry = {
        "job": job,
        "error": str(failure),
        "type": failure.kind,
        "severity": SEVERITY[failure.kind],
        "retries": retries,
        "failed_at": datetime.now(timezone.utc).isoformat(),
        "status": "failed",
    }
    # FIX: the DLQ write and the removal from the processing list are one
    # MULTI/EXEC: a crash between them can neither lose the job nor run it
    # again after it was dead-lettered. And the DLQ is never trimmed.
    with r.pipeline(transaction=True) as p:
        p.lpush(DLQ_KEY, json.dumps(entry))
        p.lrem(PROCESSING, 1, raw)
        p.execute()
    print(f"DLQ [{entry['severity']}] {job.get('id')}: {failure}", flush=True)
    if failure.kind == CRITICAL:
        page(failure, job)


def process(raw):
    try:
        job = json.loads(raw)
        job["id"]
    except (ValueError, TypeError, KeyError) as e:  # a poison message: keep it, don't crash on it
        dead_letter(raw, {"id": None, "raw": raw.decode("utf-8", "replace")}, Failure(PERMANENT, f"bad job: {e}"), 0)
        return
    attempt = 1
    while True:
        try:
            charge(job)
        except Failure as f:
            if f.kind == TRANSIENT and attempt < MAX_ATTEMPTS:
                time.sleep(backoff(attempt, f.retry_after))
                attempt += 1
                continue
            dead_letter(raw, job, f, attempt - 1)
            return
        r.lrem(PROCESSING, 1, raw)  # done: the job leaves the processing list
        print(f"ok {job['id']} (attempt {attempt})", flush=True)
        return


def recover():
    # FIX: a job this copy held when it was killed is still in its
    # processing list; put it back on the queue (the seed's BRPOP lost it).
    n = 0
    while r.lmove(PROCESSING, QUEUE_KEY, "RIGHT", "RIGHT") is not None:
        n += 1
    if n:
        print(f"recovered {n} job(s) from {PROCESSING}", flush=True)


def stop(*_):
    global stopping
    stopping = True  # FIX: finish the job in hand, then exit


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"worker {WORKER} on {QUEUE_KEY}", flush=True)
    recover()
    while not stopping:
        try:
            # FIX: BLMOVE takes the job and parks it in this copy's
            # processing list in one step: a crash from here on loses nothing.
            raw = r.blmove(QUEUE_KEY, PROCESSING, 1, "RIGHT", "LEFT")
            if raw is not None:
                process(raw)
        except redis.RedisError as e:
            print(f"redis: {e}; retrying in 1s", flush=True)
            time.sleep(1)
            try:
                recover()
            except redis.RedisError:
                pass
    print(f"worker {WORKER} stopped", flush=True)


if __name__ == "__main__":
    main()
