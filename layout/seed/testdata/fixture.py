"""Writes a seed DLQ fixture the way the tutorial's code does.

Usage: fixture.py HOST PORT DB PREFIX
Its DeadLetterHandler.send_to_dlq and FailureHandler.handle, verbatim but for
the connection and the key prefix, plus one corrupt entry and two
byte-identical ones. Prints the number of entries written per list.
"""
import json
import sys
from datetime import datetime

import redis

host, port, db, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r = redis.Redis(host=host, port=port, db=db)


def send_to_dlq(job, error, retries):
    entry = {
        'job': job,
        'error': str(error),
        'retries': retries,
        'failed_at': datetime.utcnow().isoformat(),
        'status': 'failed',
    }
    r.lpush(prefix + 'dead_letter', json.dumps(entry))


def handle(job, error, retries, severity):
    record = {
        'job': job,
        'error': str(error),
        'type': type(error).__name__,
        'severity': severity,
        'retries': retries,
        'timestamp': datetime.utcnow().isoformat(),
    }
    name = prefix + 'dlq:' + severity.lower()
    r.lpush(name, json.dumps(record))
    r.ltrim(name, 0, 9999)


send_to_dlq({'task': 'payment', 'amount': 100}, "Gateway timeout", 3)
send_to_dlq({'task': 'email', 'to': 'user@example.com'}, "SMTP error", 2)
send_to_dlq({'id': 'job-7', 'task': 'charge', 'amount': 70}, "card declined", 1)
r.lpush(prefix + 'dead_letter', b'{"job": {"task": "payment", "amo')  # corrupt: cut short
twin = json.dumps({'job': {'task': 'report'}, 'error': 'timeout', 'retries': 3,
                   'failed_at': '2026-01-02T03:04:05.000006', 'status': 'failed'})
r.lpush(prefix + 'dead_letter', twin)
r.lpush(prefix + 'dead_letter', twin)
handle({'task': 'email'}, TimeoutError("SMTP timeout"), 2, 'MEDIUM')
handle({'task': 'report'}, ValueError("Bad data format"), 3, 'LOW')
handle({'task': 'auth'}, PermissionError("Access denied"), 1, 'HIGH')
for k in ('dead_letter', 'dlq:low', 'dlq:medium', 'dlq:high'):
    print(k, r.llen(prefix + k))
