#!/usr/bin/env python3
"""A payment worker written the way the seed tutorial writes it -- naive ON PURPOSE.

It is the thing a faultline drill is meant to catch. Every line marked
"NAIVE" is a mistake the drill in drill.yaml finds; examples/python-fixed
is the same worker done right.

    worker.py            run the worker
    worker.py requeue N  put DLQ entry N back on the queue (the tutorial's reprocess)

Environment: REDIS_URL, QUEUE_KEY (default "default"), DLQ_KEY (default
"dead_letter"), PAYMENT_URL, DLQ_MAX (default 50).
"""
import json
import os
import signal
import sys
import urllib.request
from datetime import datetime, timezone

import redis

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE_KEY = os.environ.get("QUEUE_KEY", "default")
DLQ_KEY = os.environ.get("DLQ_KEY", "dead_letter")
PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
DLQ_MAX = int(os.environ.get("DLQ_MAX", "50"))
MAX_RETRIES = 3

r = redis.Redis.from_url(REDIS_URL)


def charge(job):
    # NAIVE: no Idempotency-Key, so a retry of a charge that went through
    # (a timeout, a 502) charges the card again.
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps({"job": job["id"]}).encode(),
        headers={"Content-Type": "application/json", "X-Faultline-Job": job["id"]},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=2) as resp:  # raises on non-2xx
        return resp.read()


def send_to_dlq(job, error, retries):
    entry = {
        "job": job,
        "error": str(error),
        "retries": retries,
        "failed_at": datetime.now(timezone.utc).isoformat(),
        "status": "failed",
    }
    r.lpush(DLQ_KEY, json.dumps(entry))
    # NAIVE: "keep the DLQ small" -- silently drops the oldest dead letters.
    r.ltrim(DLQ_KEY, 0, DLQ_MAX - 1)
    # NAIVE: the "alert" is a print nobody reads; a revoked API key pages no one.
    print(f"ALERT: sent to DLQ: {job.get('id')} {job.get('task', 'unknown')} - {error}", flush=True)


def process(job):
    retries = 0
    while True:
        try:
            charge(job)
            print(f"ok {job['id']}", flush=True)
            return
        except Exception as e:  # NAIVE: a declined card, a 401, a timeout: all the same
            if retries < MAX_RETRIES:
                retries += 1  # NAIVE: retried at once, no backoff, no classification
                continue
            send_to_dlq(job, e, retries)
            return


def requeue(index):
    """The tutorial's reprocess: put DLQ entry `index` back on the queue."""
    data = r.lindex(DLQ_KEY, index)
    if not data:
        print(f"no DLQ entry at {index}", flush=True)
        return False
    entry = json.loads(data)
    r.lpush(QUEUE_KEY, json.dumps(entry["job"]))
    print(f"Reprocessing: {entry['job'].get('id')}", flush=True)
    return True


def main():
    # NAIVE: exits at once, even with a job popped and not finished.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"naive worker on {QUEUE_KEY}", flush=True)
    while True:
        # NAIVE: BRPOP removes the job from Redis; if the process dies now it is gone.
        item = r.brpop(QUEUE_KEY, timeout=1)
        if item is None:
            continue
        process(json.loads(item[1]))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "requeue":
        sys.exit(0 if requeue(int(sys.argv[2])) else 1)
    main()
