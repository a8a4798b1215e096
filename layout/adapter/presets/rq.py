"""faultline's RQ preset: puts jobs into an RQ queue and reads its failed jobs.

Written against RQ 1.13.0 (Debian python3-rq, redis-py 4.3.4) and Redis >= 5;
run as `/usr/bin/python3 rq.py MODE`. faultline writes this file to a
temporary folder and runs it; it needs nothing next to it.

Modes:
  version  print "rq <version>" (faultline's preflight); exit 1 if RQ cannot be loaded.
  inject   one job document (JSON) a line on stdin; each is enqueued with RQ's own
           client, Queue(FAULTLINE_PRESET_QUEUE).enqueue(FAULTLINE_PRESET_JOB, doc,
           job_id=doc["id"], **options) -- the whole document is the function's one
           argument -- and answered "ok" or the error, one line, in order.
  dlq      print every job of the queue's FailedJobRegistry (rq:failed:<queue>), read
           in one Lua script (the registry and each job's hash and last result as of
           one instant), as one JSON line: {"id", "job", "error", "error_class",
           "retries", "failed_at", "status"}; exit 0. status is "failed", or
           "expired" past the entry's failure_ttl (RQ's own reads drop it then), or
           "gone" when the job's hash is (then "job" is null and "raw" the ID).
  ready    exit 0 when FAULTLINE_PRESET_COPIES (default 1) RQ workers are registered
           on the queue (Worker.all(queue=...)), else 1 saying what it saw.

Environment: FAULTLINE_REDIS_URL, FAULTLINE_PRESET_QUEUE, FAULTLINE_PRESET_JOB (the
function as a dotted path, "tasks.charge"; "{task}" is the document's task, empty
is the task itself), FAULTLINE_PRESET_OPTIONS (a JSON object of enqueue keywords:
job_timeout, result_ttl, ttl, failure_ttl, description, at_front, meta, retry
{"max": N, "interval": S or [S, ...]} made into rq.Retry, and Queue's serializer,
a dotted path; the durations are
scenario seconds, divided by FAULTLINE_TIME_SCALE and rounded to whole seconds,
at least 1, as RQ keeps them), FAULTLINE_PRESET_DIR (a folder, or a virtualenv,
to import RQ from when the system has none).

What it writes to your Redis: what Queue.enqueue writes (rq:job:<id>,
rq:queue:<queue>, rq:queues) -- never over an existing rq:job:<id>, which enqueue
would overwrite field by field -- and, with a retry option,
meta["faultline_retry_max"] in the job: RQ keeps only the retries left, so the
dlq mode needs the maximum to say how many retries were made. The dlq mode only
reads; ready reads, and Worker.all drops from rq:workers:<queue> the workers whose
keys have expired, as RQ does. It never unpickles anything but plain data (a job
whose arguments are objects is printed without them).
"""
import glob
import io
import json
import os
import pickle
import re
import sys
import zlib
from base64 import b64decode
from datetime import datetime, timezone

# This file is rq.py: its own folder must not shadow the rq package.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
if os.environ.get("FAULTLINE_PRESET_DIR"):  # after the system's: only what it lacks
    d = os.path.abspath(os.environ["FAULTLINE_PRESET_DIR"])
    sys.path += [d] + glob.glob(os.path.join(d, "lib", "python3*", "site-packages"))

URL = os.environ.get("FAULTLINE_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE = os.environ.get("FAULTLINE_PRESET_QUEUE", "default")
DEFAULT_FAILURE_TTL = 365 * 24 * 3600  # rq.defaults.DEFAULT_FAILURE_TTL
RETRY_MAX = "faultline_retry_max"


def one_line(text):
    return " ".join(str(text).split()) or "error"


def load_rq():
    try:
        import redis
        import rq
        from rq import Queue, Retry, Worker
    except Exception as e:  # ImportError, or a broken install
        print(f"cannot load RQ with {sys.executable}: {one_line(e)}", file=sys.stderr)
        sys.exit(1)
    return redis, rq, Queue, Retry, Worker


# --- inject -------------------------------------------------------------------

ENQUEUE_KEYWORDS = {"job_timeout", "result_ttl", "ttl", "failure_ttl", "description", "at_front", "meta", "retry",
                    "serializer"}  # serializer is Queue's: "rq.serializers.JSONSerializer"
DURATIONS = {"job_timeout", "result_ttl", "ttl", "failure_ttl"}  # -1 (never) is kept


def wall_seconds(v, scale):
    """A scenario duration in seconds as RQ's whole wall seconds (at least 1)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{v!r}: a duration is a number of seconds")
    if v <= 0:
        return int(v)
    return max(1, round(v / scale))


def enqueue_options(raw, Retry):
    """FAULTLINE_PRESET_OPTIONS as Queue.enqueue keywords (ValueError: why not)."""
    opts = json.loads(raw or "{}")
    if not isinstance(opts, dict):
        raise ValueError("FAULTLINE_PRESET_OPTIONS is not a JSON object")
    unknown = sorted(set(opts) - ENQUEUE_KEYWORDS)
    if unknown:  # Queue.enqueue would pass them to the function as keyword arguments
        raise ValueError(f"unknown enqueue option(s) {', '.join(unknown)}: the preset takes {', '.join(sorted(ENQUEUE_KEYWORDS))}")
    scale = float(os.environ.get("FAULTLINE_TIME_SCALE") or 1)
    kw = dict(opts)
    for k in DURATIONS & set(kw):
        kw[k] = wall_seconds(kw[k], scale)
    if "retry" in kw:
        r = kw["retry"]
        if not isinstance(r, dict) or not isinstance(r.get("max"), int) or set(r) - {"max", "interval"}:
            raise ValueError('retry is {"max": N, "interval": seconds or [seconds, ...]}')
        iv = r.get("interval", 0)
        iv = [wall_seconds(s, scale) for s in iv] if isinstance(iv, list) else wall_seconds(iv, scale)
        kw["retry"] = Retry(max=r["max"], interval=iv)
        kw["meta"] = {**(kw.get("meta") or {}), RETRY_MAX: r["max"]}
    return kw


def inject():
    redis, rq, Queue, Retry, _ = load_rq()
    conn = redis.Redis.from_url(URL)
    job_name = os.environ.get("FAULTLINE_PRESET_JOB", "")
    try:
        kw, setup_error = enqueue_options(os.environ.get("FAULTLINE_PRESET_OPTIONS"), Retry), None
        queue = Queue(QUEUE, connection=conn, serializer=kw.pop("serializer", None))
    except Exception as e:  # answered on every line: the drill shows it
        kw, setup_error = {}, one_line(f"{type(e).__name__}: {e}")
    for line in sys.stdin:
        if setup_error:
            answer = setup_error
        else:
            answer = enqueue(queue, job_name, kw, conn, line)
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


def enqueue(queue, job_name, kw, conn, line):
    """Enqueues one job document: "ok", or the error in one line."""
    try:
        doc = json.loads(line)
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not doc["id"]:
            raise ValueError("a job document is a JSON object with a string id")
        task = str(doc.get("task") or "")
        func = job_name.replace("{task}", task) if job_name else task
        if not func:
            raise ValueError("no function: FAULTLINE_PRESET_JOB is empty and the document has no task")
        if conn.exists(f"rq:job:{doc['id']}"):  # enqueue would overwrite it, old fields and all
            raise ValueError(f"rq:job:{doc['id']} exists: a job with this ID is already in this Redis")
        queue.enqueue(func, doc, job_id=doc["id"], **{k: (dict(v) if k == "meta" else v) for k, v in kw.items()})
        return "ok"
    except Exception as e:  # every line is answered, whatever happens
        return one_line(f"{type(e).__name__}: {e}")


# --- dlq ----------------------------------------------------------------------

# The whole registry, each job's hash and its latest result, as of one instant.
READ_FAILED = """
local ids = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #ids, 2 do
  local id = ids[i]
  local latest = redis.pcall('XREVRANGE', 'rq:results:' .. id, '+', '-', 'COUNT', 1)
  if type(latest) ~= 'table' or latest.err then latest = {} end
  out[#out + 1] = {id, ids[i + 1], redis.call('HGETALL', 'rq:job:' .. id), latest}
end
local t = redis.call('TIME')
return {out, t[1]}
"""


class PlainData(pickle.Unpickler):
    """Unpickles plain data only: no class of the job's is ever imported or run."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def loads(data):
    """RQ's serialized value (pickle, RQ's default, or JSON) as plain data."""
    if data[:1] == b"\x80":
        return PlainData(io.BytesIO(data)).load()
    return json.loads(data)


def pairs(flat):
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def exception_of(text):
    """("<Class>: <message>", "<Class>") from a traceback's last line; RQ's own
    messages ("Work-horse terminated unexpectedly ...", "Moved to FailedJobRegistry
    at ...": a job abandoned by its worker) have no class."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "", ""
    last = lines[-1].strip()
    m = re.match(r"([A-Za-z_][\w.]*)(:|$)", last)
    if "Traceback (most recent call last)" in text and m:
        return last, m.group(1)
    return one_line(text), ""


def rfc3339(ts):
    return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def dead_letter(job_id, score, flat, latest, now):
    # A score is the entry's expiry (failure + failure_ttl; negative: never). Past
    # it, RQ's own reads (rq info, FailedJobRegistry.get_job_ids) drop the entry.
    entry = {"id": job_id, "status": "expired" if 0 <= score <= now else "failed"}
    if not flat:
        # The job's hash is gone (expired with its failure_ttl, or deleted) while the
        # registry still lists it: RQ itself can no longer show or requeue it.
        entry.update(status="gone", raw=job_id, job=None,
                     error=f"could not decode: rq:job:{job_id} is gone (expired or deleted)")
        return entry
    h = pairs(flat)
    problems = []
    try:
        data = h["data"]
        try:
            data = zlib.decompress(data)
        except zlib.error:
            pass
        _func, _instance, args, _kwargs = loads(data)
        entry["job"] = args[0] if len(args) == 1 else list(args)
    except Exception as e:
        entry["job"] = None
        problems.append(f"could not decode the job's data: {type(e).__name__}: {e}")

    # The exception: in the job hash (Redis < 5, or written by RQ itself: an abandoned
    # job), else the latest result in the stream rq:results:<id>, zlib + base64.
    text, failed_ms = "", None
    if h.get("exc_info"):
        try:
            text = zlib.decompress(h["exc_info"]).decode("utf-8", "replace")
        except zlib.error:
            text = h["exc_info"].decode("utf-8", "replace")
    if not text and latest:
        stream_id, fields = latest[0]
        fields = pairs(fields)
        if fields.get("type") == b"2" and fields.get("exc_string"):  # Result.Type.FAILED
            text = zlib.decompress(b64decode(fields["exc_string"])).decode("utf-8", "replace")
            failed_ms = int(stream_id.split(b"-")[0])
    entry["error"], entry["error_class"] = exception_of(text) if text else ("", "")
    if not text:
        problems.append("no exception recorded")

    # Retries made: RQ keeps the retries left; the maximum is the inject mode's meta.
    retries_left = int(h["retries_left"]) if h.get("retries_left") else None
    retry_max = None
    if h.get("meta"):
        try:
            retry_max = loads(h["meta"]).get(RETRY_MAX)
        except Exception:
            pass
    if retries_left is None:
        entry["retries"] = 0  # enqueued without Retry: RQ retries nothing
    elif isinstance(retry_max, int):
        entry["retries"] = retry_max - retries_left
    else:
        entry["retries"], entry["retries_left"] = None, retries_left

    # When it failed: the failure's result, else the registry's score (added at the
    # failure, scored failure + failure_ttl), else the job's ended_at.
    ttl = int(h["failure_ttl"]) if h.get("failure_ttl") else DEFAULT_FAILURE_TTL
    if failed_ms is not None:
        entry["failed_at"] = rfc3339(failed_ms / 1000)
    elif ttl >= 0 and 0 <= score != float("inf"):
        entry["failed_at"] = rfc3339(score - ttl)
    elif h.get("ended_at"):
        entry["failed_at"] = h["ended_at"].decode()
    else:
        entry["failed_at"] = None
    if problems:
        entry["decode"] = "; ".join(problems)
    return entry


def dlq():
    redis, *_ = load_rq()
    conn = redis.Redis.from_url(URL)
    rows, now = conn.eval(READ_FAILED, 1, f"rq:failed:{QUEUE}")
    for job_id, score, flat, latest in rows:
        job_id = job_id.decode("utf-8", "replace")
        try:
            entry = dead_letter(job_id, float(score), flat, latest, int(now))
        except Exception as e:  # never dropped: printed as corrupt (its ID still names it)
            entry = {"id": job_id, "raw": job_id, "error": f"could not decode: {type(e).__name__}: {e}"}
        print(json.dumps(entry, default=str))
    sys.stdout.flush()


# --- ready --------------------------------------------------------------------

def ready():
    redis, _, Queue, _, Worker = load_rq()
    want = int(os.environ.get("FAULTLINE_PRESET_COPIES") or 1)
    queue = Queue(QUEUE, connection=redis.Redis.from_url(URL, socket_timeout=1))
    workers = Worker.all(queue=queue)  # rq:workers:<queue>, each rq:worker:<name> that still exists
    if len(workers) >= want:
        sys.exit(0)
    seen = ", ".join(f"{w.name} ({w.get_state()})" for w in workers) or "none"
    print(f"{len(workers)} of {want} RQ worker(s) registered on queue {QUEUE}: {seen}", file=sys.stderr)
    sys.exit(1)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "version":
        _, rq, *_ = load_rq()
        print(f"rq {rq.__version__}")
    elif mode == "inject":
        inject()
    elif mode == "dlq":
        dlq()
    elif mode == "ready":
        ready()
    else:
        print("usage: rq.py version|inject|dlq|ready", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # Redis unreachable, a script error: one line, exit 1
        print(f"rq preset: {one_line(f'{type(e).__name__}: {e}')}", file=sys.stderr)
        sys.exit(1)
