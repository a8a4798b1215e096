"""faultline's preset adapter for Celery on the Redis broker.

Written against Celery 5.2.6 and kombu 5.2.4 (Debian python3-celery), run as
`/usr/bin/python3 celery.py MODE`. It touches the team's Redis as follows:

  version  print "celery <version>"; exit 1 with the reason if Celery cannot be
           imported.
  inject   one job document per line on stdin; each is sent with Celery's own
           client, app.send_task(JOB, args=[document], task_id=document["id"],
           queue=QUEUE, **OPTIONS): kombu SADDs the queue's binding to
           _kombu.binding.QUEUE and LPUSHes the message (JSON; the task ID at
           headers.id, the arguments base64 in body) onto the list QUEUE -- or,
           with a priority option, QUEUE\x06\x163, \x06\x166 or \x06\x169 (priorities
           3-5, 6-8, 9). One answer line per input line: "ok" or the error.
  dlq      Celery keeps no dead letters. What it keeps of a failed task is the
           Redis result backend's record celery-task-meta-<task id> with
           status FAILURE, written only when the app has a result backend, kept
           result_expires (one day by default, None: for ever) and carrying the
           task's args and queue only with result_extended=True. This mode prints
           those records, one JSON line each, read in one Lua script (one atomic
           look at every celery-task-meta-* key): records of another queue are
           skipped; a record without a queue (no result_extended) is printed with
           "job": null; a value that is no Celery result is printed raw. Nothing
           when there are none. It imports only the Redis client (fast).
  ready    exit 0 when at least COPIES Celery workers answer a broadcast
           `active_queues` naming QUEUE (a worker answers from its event loop,
           once its task consumer is set up: it is consuming the queue). The
           broadcast is kombu's pidbox: a PUBLISH on /<db>.celery.pidbox, the
           answers on a reply list <uuid>.reply.celery.pidbox bound in
           _kombu.binding.reply.celery.pidbox; both are removed after (0.3 s).

Environment: FAULTLINE_REDIS_URL (broker and result backend),
FAULTLINE_PRESET_QUEUE, FAULTLINE_PRESET_JOB (the task name, "{task}" replaced by
the document's task; empty: the document's task), FAULTLINE_PRESET_OPTIONS (a
JSON object of apply_async options, e.g. {"priority": 3} or {"countdown": 1}),
FAULTLINE_PRESET_COPIES (ready: how many workers, default 1).
"""
import json
import os
import sys
from datetime import datetime, timezone

# This file is named celery.py: its own folder must not shadow the library.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

REDIS_URL = os.environ.get("FAULTLINE_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE = os.environ.get("FAULTLINE_PRESET_QUEUE") or "celery"
JOB = os.environ.get("FAULTLINE_PRESET_JOB", "")
META_PREFIX = "celery-task-meta-"  # celery/backends/base.py, KeyValueStoreBackend.task_keyprefix


def fail(msg, code=1):
    print(msg.replace("\n", " "), file=sys.stderr, flush=True)
    sys.exit(code)


def load_celery():
    try:
        import celery
        import kombu.transport.redis  # noqa: F401 (the broker's transport)
        import redis  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        fail(f"cannot load celery with {sys.executable}: {type(e).__name__}: {e}")
    return celery


def app_for(celery):
    # No result backend: send_task must not subscribe to results it never reads.
    return celery.Celery("faultline", broker=REDIS_URL)


def version():
    celery = load_celery()
    print(f"celery {celery.__version__}")


def inject():
    app = app_for(load_celery())
    try:
        options = json.loads(os.environ.get("FAULTLINE_PRESET_OPTIONS") or "{}")
    except ValueError as e:
        fail(f"FAULTLINE_PRESET_OPTIONS is not JSON: {e}", 2)
    if not isinstance(options, dict):
        fail("FAULTLINE_PRESET_OPTIONS is not a JSON object", 2)
    for k in ("args", "kwargs", "task_id", "queue"):
        if k in options:
            fail(f"FAULTLINE_PRESET_OPTIONS may not set {k}: the preset sets it", 2)
    with app.producer_or_acquire() as producer:  # one connection, reused
        for line in sys.stdin:
            if not line.strip():
                print("empty line: no job document", flush=True)
                continue
            try:
                doc = json.loads(line)
                if not isinstance(doc, dict) or not isinstance(doc.get("id"), str) or not doc["id"]:
                    raise ValueError("job document without a string id")
                task = str(doc.get("task") or "")
                name = JOB.replace("{task}", task) if JOB else task
                if not name:
                    raise ValueError("no task name: FAULTLINE_PRESET_JOB is empty and the document has no task")
                app.send_task(name, args=[doc], task_id=doc["id"], queue=QUEUE,
                              producer=producer, **options)
                answer = "ok"
            except Exception as e:  # an answer for every line, whatever happens
                answer = f"{type(e).__name__}: {e}"
            print(answer.replace("\n", " "), flush=True)


# Every celery-task-meta-* string whose status is FAILURE (or that is no
# Celery result at all: it is printed as corrupt), in one script: Redis runs
# nothing else meanwhile, so the SCAN sees the keyspace of one instant. (It
# blocks Redis for one pass over the database's keys: give drills a database
# of their own.)
DLQ_SCRIPT = """
local out, cursor = {}, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1] .. '*', 'COUNT', 1000, 'TYPE', 'string')
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local v = redis.call('GET', key)
    local ok, meta = pcall(cjson.decode, v)
    if not ok or type(meta) ~= 'table' or meta['status'] == nil or meta['status'] == 'FAILURE' then
      out[#out + 1] = key
      out[#out + 1] = v
    end
  end
until cursor == '0'
return out
"""


def rfc3339(date_done):
    # date_done is datetime.utcnow().isoformat(): UTC, without an offset.
    try:
        d = datetime.fromisoformat(str(date_done))
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def entry(key, raw):
    text = raw.decode("utf-8", "replace")
    task_id = key.decode("utf-8", "replace")[len(META_PREFIX):]
    try:
        meta = json.loads(text)
        if not isinstance(meta, dict) or "status" not in meta:
            raise ValueError("not a Celery result (a JSON object with a status)")
    except ValueError as e:
        return {"raw": text, "key": META_PREFIX + task_id, "error": f"could not decode: {e}"}
    queue = meta.get("queue")
    if queue is not None and queue != QUEUE:
        return None  # another queue's failure
    res = meta.get("result") if isinstance(meta.get("result"), dict) else {}
    cls = str(res.get("exc_type") or "")
    msg = res.get("exc_message")
    if isinstance(msg, (list, tuple)):  # the exception's args
        msg = ", ".join(str(m) for m in msg)
    args = meta.get("args")
    e = {
        "id": meta.get("task_id") or task_id,
        "job": args[0] if isinstance(args, list) and len(args) == 1 else args,
        "error": f"{cls}: {msg}" if cls else str(msg if msg is not None else meta.get("result")),
        "error_class": cls,
        "retries": meta.get("retries") if isinstance(meta.get("retries"), int) else 0,
        "failed_at": rfc3339(meta.get("date_done")),
        "status": "failed",
    }
    if e["failed_at"] is None:
        del e["failed_at"]
    return e


def dlq():
    # Only the Redis client: Celery itself takes half a second to import.
    try:
        import redis
    except ImportError as e:
        fail(f"cannot load the redis client with {sys.executable}: {e}")

    r = redis.Redis.from_url(REDIS_URL)
    flat = r.eval(DLQ_SCRIPT, 0, META_PREFIX)
    out = []
    for key, raw in zip(flat[0::2], flat[1::2]):
        e = entry(key, raw)
        if e is not None:
            out.append(json.dumps(e))
    if out:
        print("\n".join(out))


def ready():
    app = app_for(load_celery())
    want = int(os.environ.get("FAULTLINE_PRESET_COPIES") or "1")
    # One answer per worker process that runs its consumer: a copy whose
    # node name repeats another's still answers on its own.
    replies = app.control.broadcast("active_queues", reply=True, timeout=0.3)
    seen, consuming = [], 0
    for reply in replies or []:
        for node, queues in reply.items():
            names = [q.get("name") for q in queues or [] if isinstance(q, dict)]
            seen.append(f"{node} {names}")
            if QUEUE in names:
                consuming += 1
    if consuming >= want:
        return
    fail(f"{consuming} of {want} Celery worker(s) consume {QUEUE!r}; "
         f"answers to active_queues: {'; '.join(seen) or 'none'}")


MODES = {"version": version, "inject": inject, "dlq": dlq, "ready": ready}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        fail(f"usage: {sys.argv[0]} {'|'.join(MODES)}", 2)
    try:
        MODES[sys.argv[1]]()
    except SystemExit:
        raise
    except Exception as e:
        fail(f"{sys.argv[1]}: {type(e).__name__}: {e}")
