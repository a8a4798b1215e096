"""../fixed/tasks.py with one default put back: the results expire.

Celery's Redis result backend keeps a result -- a FAILURE record, our dead
letter, included -- for result_expires, one day by default: the day after a
charge failed, nothing says it did. A day is too long for a drill, so this
copy keeps results 5 s: ../drill-result-expires.yaml watches the dead letters
vanish. Everything else is ../fixed/tasks.py, run as this module.
"""
import os

_FIXED = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixed", "tasks.py")
with open(_FIXED) as f:
    exec(compile(f.read(), _FIXED, "exec"))  # defines app, SCALE and the task tasks.charge

app.conf.result_expires = 5.0 / SCALE  # noqa: F821 (from ../fixed/tasks.py); the default is 86400
