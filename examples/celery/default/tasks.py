"""A payment task the way Celery's "First steps with Celery" teaches it.

Run: REDIS_URL=redis://localhost:6379/0 PAYMENT_URL=http://.../call \
     python3 -m celery -A tasks worker -Q charges --loglevel INFO

Celery's defaults, untouched: no result backend, no retries, the message
acknowledged as soon as a pool process starts the task. A task that raises is
logged and gone. Compare ../fixed/tasks.py, which changes only what the drill
shows wrong here.
"""
import json
import os
import urllib.request

from celery import Celery

app = Celery("tasks", broker=os.environ.get("REDIS_URL", "redis://localhost:6379/0"))

PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
# faultline's drill may run the scenario faster than the wall clock
# (TIME_SCALE scenario seconds per second): our 2 s timeout shrinks with it.
TIMEOUT = 2.0 / float(os.environ.get("TIME_SCALE") or 1)


@app.task
def charge(doc):
    """Charge doc["payload"]; doc is {"id", "task", "payload", "idempotency_key"}."""
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps(doc["payload"]).encode(),
        headers={"Content-Type": "application/json", "X-Faultline-Job": doc["id"]},
        method="POST",
    )
    # urlopen raises on any non-2xx answer, a timeout or a refused connection.
    with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
        return resp.status
