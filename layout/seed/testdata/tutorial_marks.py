"""Prints what the tutorial's reprocess_single would write for one entry.

Reads the entry's bytes on stdin; prints two lines: the job it LPUSHes
(json.dumps(entry['job'])) and the entry it LSETs
(json.dumps({**entry, 'status': 'reprocessing'})).
"""
import json
import sys

entry = json.loads(sys.stdin.buffer.read())
print(json.dumps(entry['job']))
print(json.dumps({**entry, 'status': 'reprocessing'}))
