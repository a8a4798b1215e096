"""The payment task of ../default/tasks.py with what a senior engineer changes.

Run: REDIS_URL=redis://localhost:6379/0 PAYMENT_URL=http://.../call \
     python3 -m celery -A tasks worker -Q charges --loglevel INFO

Every "FIX" names the failure it prevents; `diff ../default/tasks.py tasks.py`
is the whole change. faultline's drill (../drill-fixed.yaml) checks each one
from outside.
"""
import http.client
import json
import os
import urllib.error
import urllib.request

from celery import Celery

REDIS_URL = os.environ.get("REDIS_URL", "redis://localhost:6379/0")
app = Celery(
    "tasks",
    broker=REDIS_URL,
    # FIX: Celery has no dead letter queue. With a result backend, a task that
    # fails for good leaves a FAILURE record, celery-task-meta-<task id>: that
    # record is our DLQ (faultline's celery preset reads it). Without one, a
    # failed task is a log line and nothing else: lost.
    backend=REDIS_URL,
)
# faultline's drill may run the scenario faster than the wall clock
# (TIME_SCALE scenario seconds per second): every wait we configure shrinks with it.
SCALE = float(os.environ.get("TIME_SCALE") or 1)
app.conf.update(
    # FIX: the FAILURE record carries the task's name, args (the job itself),
    # retries and queue -- without it only the ID and the exception: an
    # operator could not tell which charge failed, nor run it again.
    result_extended=True,
    # FIX: results expire after one day by default: every dead letter would
    # vanish overnight. None keeps them until someone deletes them (so every
    # success's record stays too: budget Redis memory, or purge SUCCESS records).
    result_expires=None,
    # FIX: by default the message is acknowledged when a pool process starts
    # the task: a worker killed -9 mid-charge (OOM, a node lost) loses it.
    # Acknowledged when the task returns, it is redelivered instead -- and the
    # Idempotency-Key below makes the second charge a replay.
    task_acks_late=True,
    # FIX: ...even when only the pool process running it dies (the OOM killer
    # picks one child): by default Celery then acknowledges it as failed.
    task_reject_on_worker_lost=True,
    # FIX: an unacknowledged message comes back only once it is older than the
    # visibility timeout, one hour by default, and only when a worker looks:
    # when it connects at its start (before mingle), then every 100 s (kombu
    # 5.2). 2.5 s brings a killed worker's charges back when it restarts --
    # here 2 s after the kill, plus its boot: older than 2.5 s. The price: a message a live
    # worker holds longer than that -- a retry waiting out its countdown (up to
    # 8 s below), a run (up to 2 s) -- is put back too when a worker looks, and
    # runs twice: harmless here (the same Idempotency-Key), but in production
    # pick it above the longest countdown plus the longest run.
    broker_transport_options={"visibility_timeout": 2.5 / SCALE},
)

PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
TIMEOUT = 2.0 / SCALE


class TransientError(Exception):
    """5xx, 429, a timeout, a refused or cut connection: try again later."""


class PaymentDeclined(Exception):
    """402: the card was declined. Charging it again will not help."""


class PaymentRefused(Exception):
    """401, 403 or any other 4xx: our request is wrong. Not retried."""


# FIX: Celery retries nothing unless told. Transient failures are retried
# with exponential backoff, 1, 2, 4, 8 s: 15 s, well past a 3 s outage; then
# the task fails for good (FAILURE: a dead letter). Declines and refusals are
# not in autoretry_for: FAILURE at once, never charged again.
# FIX: retry_jitter=False -- Celery's full jitter draws the countdown from
# [0, backoff], whole seconds: half the first retries come back at once, a hot
# loop against a gateway that is down. (retry_backoff is whole seconds too,
# int() in celery/app/autoretry.py: it cannot follow TIME_SCALE.)
@app.task(autoretry_for=(TransientError,), retry_backoff=1, retry_jitter=False, max_retries=4)
def charge(doc):
    """Charge doc["payload"]; doc is {"id", "task", "payload", "idempotency_key"}."""
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps(doc["payload"]).encode(),
        headers={
            "Content-Type": "application/json",
            "X-Faultline-Job": doc["id"],
            # FIX: a retry or a redelivery of a charge that went through (a
            # timeout, a 503 after the fact, a worker killed mid-call) is
            # replayed by the gateway, not charged a second time.
            "Idempotency-Key": doc.get("idempotency_key") or doc["id"],
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
            return resp.status
    # FIX: classify the failure instead of raising whatever urlopen raised.
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")[:300]
        if e.code == 402:
            try:
                code = json.loads(body)["error"].get("decline_code") or "card_declined"
            except (ValueError, KeyError, TypeError, AttributeError):
                code = "card_declined"
            raise PaymentDeclined(f"card declined: {code}") from None
        if e.code in (408, 429) or e.code >= 500:
            raise TransientError(f"HTTP {e.code}: {body}") from None
        raise PaymentRefused(f"HTTP {e.code}: {body}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as e:  # timeouts, refused, reset
        raise TransientError(f"{type(e).__name__}: {e}") from None
