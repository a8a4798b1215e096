"""The payment task of tasks.py with what a senior engineer changes; each FIX names
the failure it prevents. drill-fixed.yaml drills it and is expected to pass.

Three of the changes are outside this file:
- the producer enqueues with a retry policy (RQ retries nothing without one):
      queue.enqueue("tasks_fixed.charge", job, job_id=job["id"],
                    retry=Retry(max=4, interval=[2, 3, 5, 8]))
  (drill-fixed.yaml's inject.options: faultline's RQ preset makes the Retry);
- the worker runs RQ's scheduler, which puts a job back on its queue once its retry
  interval is up (without it a retry with an interval never runs), and this
  module's worker class;
- the worker's job monitoring interval, 5 s instead of 30: the heartbeat of a job
  in hand lives the interval + 60 s, and a job whose work horse was killed with
  its worker (a container kill, faultline's worker-crash) waits that long in
  rq:wip:<queue> before any cleanup may send it back (65 s instead of 90 s):
      rq worker <queue> --with-scheduler -w tasks_fixed.ChargeWorker --job-monitoring-interval 5 --url ...

Environment: PAYMENT_URL, TIME_SCALE (as tasks.py).
"""
import json
import os
import urllib.error
import urllib.request
from datetime import timedelta

from rq import Worker, worker_registration
from rq.job import get_current_job
from rq.registry import clean_registries
from rq.utils import utcnow

PAYMENT_URL = os.environ.get("PAYMENT_URL", "http://127.0.0.1:8080/charge")
TIME_SCALE = float(os.environ.get("TIME_SCALE") or 1)


class PaymentRefused(Exception):
    """A permanent failure: a declined card (402), a revoked key (401/403), a bad
    request. The same call fails the same way every time."""


def charge(job):
    req = urllib.request.Request(
        PAYMENT_URL,
        data=json.dumps(job["payload"]).encode(),
        headers={
            "Content-Type": "application/json",
            "X-Faultline-Job": job["id"],
            # FIX: a retry of a charge that went through (an answer that never came,
            # a 5xx after the fact) is a replay, not a second charge.
            "Idempotency-Key": job.get("idempotency_key") or job["id"],
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=2 / TIME_SCALE) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        if e.code in (408, 429) or e.code >= 500:
            raise  # transient: RQ retries the job (its Retry), then fails it for good
        # FIX: retrying a declined card cannot help and can charge twice. RQ 1.13
        # retries every exception of a job enqueued with Retry, and fails for good a
        # job with no retries left: drop them before raising. (None rather than 0:
        # RQ then keeps the job's recorded retries_left, so the failed job still
        # says how many retries ran.)
        get_current_job().retries_left = None
        raise PaymentRefused(f"HTTP {e.code}: {e.read()[:300].decode('utf-8', 'replace')}") from None
    # Timeouts, refused and cut connections (URLError, OSError) propagate: transient,
    # retried with the same Idempotency-Key.


class ChargeWorker(Worker):
    """RQ's Worker with its housekeeping every few seconds instead of every 10 minutes.

    FIX: with --with-scheduler on every copy, one copy holds the scheduler lock
    (rq:scheduler-lock:<queue>, 61 s TTL). Kill that copy and no retry with an
    interval runs until the lock has expired AND a surviving worker runs its
    maintenance, which RQ 1.13 does every 10 minutes (DEFAULT_MAINTENANCE_TASK_INTERVAL,
    no option): retries stall for up to ten minutes. Here a survivor takes the
    scheduler over within MAINTENANCE seconds of the lock's expiry (up to ~61 s
    after the kill: RQ's lock TTL is fixed).

    FIX: a job whose work horse died with its worker (a container or cgroup kill,
    faultline's worker-crash; a plain `kill -9` of the worker alone leaves the horse
    running, it is in a session of its own) stays in the StartedJobRegistry
    (rq:wip:<queue>) until its heartbeat runs out (--job-monitoring-interval + 60 s)
    and a registry cleanup moves it on: retried if it has retries left, else failed.
    RQ 1.13 cleans a queue's registries at a worker's 10-minute maintenance, at most
    every 15 minutes (a 899 s lock): the job is stranded for 20 minutes or more. Here
    every MAINTENANCE seconds.
    """

    MAINTENANCE = max(1.0, 5 / TIME_SCALE)  # seconds

    @property
    def dequeue_timeout(self):
        # An idle worker blocks in BLPOP this long between two maintenance checks
        # (RQ's own: worker_ttl - 15 = 405 s).
        return max(1, int(self.MAINTENANCE))

    @property
    def should_run_maintenance_tasks(self):
        return self.last_cleaned_at is None or utcnow() - self.last_cleaned_at > timedelta(seconds=self.MAINTENANCE)

    def clean_registries(self):
        # As Worker.clean_registries, with a cleaning lock of MAINTENANCE seconds
        # (one worker at a time still: two cleanups at once could retry a job twice).
        for queue in self.queues:
            if self.connection.set(queue.registry_cleaning_key, self.name, nx=True, ex=max(1, int(self.MAINTENANCE))):
                clean_registries(queue)
                worker_registration.clean_worker_registry(queue)
        self.last_cleaned_at = utcnow()
