"""A payment task written the way RQ's getting-started docs teach: a plain function
in a module the worker can import, run by `rq worker <queue>`, enqueued by the
producer with `Queue(...).enqueue("tasks.charge", job)`. RQ's defaults everywhere.

This is the DEFAULT configuration that drill-default.yaml drills (and catches);
tasks_fixed.py is the same task with what a senior engineer changes.

    rq worker <queue> --url redis://127.0.0.1:6379/0     (from this folder)

Environment: PAYMENT_URL (the payment gateway), TIME_SCALE (the drill's time
scale: scenario seconds per wall second; 1 outside a drill).
"""
import json
import os
import urllib.request

PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
TIME_SCALE = float(os.environ.get("TIME_SCALE") or 1)


def charge(job):
    """Charge job["payload"]; job is the document the producer enqueued:
    {"id", "task", "payload", "idempotency_key"}."""
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps(job["payload"]).encode(),
        # No Idempotency-Key: the getting-started way sends none.
        headers={"Content-Type": "application/json", "X-Faultline-Job": job["id"]},
        method="POST",
    )
    # urlopen raises HTTPError on any non-2xx answer, URLError / timeout on no answer:
    # the job fails, and RQ (no Retry given at enqueue) puts it in the queue's
    # FailedJobRegistry at once, whatever the failure was.
    with urllib.request.urlopen(req, timeout=2 / TIME_SCALE) as resp:
        return json.loads(resp.read() or b"null")
