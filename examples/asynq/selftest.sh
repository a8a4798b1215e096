#!/bin/sh
# By-hand check of the asynq example without faultline: starts its own
# redis-server and the paystub (every charge declined) on free loopback
# ports, the worker, injects N jobs (default 10300) through bin/inject and
# reads the archive back through bin/observe. It checks that every job was
# called once, that a job's ID survives the round trip, and shows asynq's
# archive cap: with N above 10,000 the archive holds 9,999 and the rest are
# gone. Usage: ./selftest.sh [N]
set -eu
cd "$(dirname "$0")"
N=${1:-10300}
REDIS_SERVER=${REDIS_SERVER:-/usr/bin/redis-server}
./build.sh >/dev/null
tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rport=$(freeport)
pport=$(freeport)
"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
pids="$pids $!"
bin/paystub "127.0.0.1:$pport" >"$tmp/paystub.log" 2>&1 &
pids="$pids $!"
for _ in $(seq 50); do
	redis-cli -p "$rport" ping >/dev/null 2>&1 && curl -sf "127.0.0.1:$pport/stats" >/dev/null && break
	sleep 0.1
done

export REDIS_URL="redis://127.0.0.1:$rport/0" QUEUE=selftest
PAYMENT_URL="http://127.0.0.1:$pport/call" CONCURRENCY=20 bin/worker >"$tmp/worker.log" 2>&1 &
pids="$pids $!"

python3 -c "
import sys
for i in range(1, $N + 1):
    sys.stdout.write('{\"id\": \"charge-%d\", \"task\": \"charge\", \"payload\": \"\", \"idempotency_key\": \"key-%d\"}\n' % (i, i))
" >"$tmp/jobs.jsonl"

t0=$(date +%s.%N)
oks=$(bin/inject <"$tmp/jobs.jsonl" | grep -cx ok || true)
t1=$(date +%s.%N)
calls=0
for _ in $(seq 1200); do
	calls=$(curl -s "127.0.0.1:$pport/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"])')
	[ "$calls" -ge "$N" ] && break
	sleep 0.05
done
t2=$(date +%s.%N)
sleep 0.5 # the last archive scripts
bin/observe >"$tmp/archive.jsonl"
archived=$(wc -l <"$tmp/archive.jsonl")
stats=$(curl -s "127.0.0.1:$pport/stats")

echo "injected $oks/$N ok in $(python3 -c "print(round($t1 - $t0, 2))")s; all $calls calls made $(python3 -c "print(round($t2 - $t0, 2))")s after the first"
echo "payments: $stats"
echo "archived (bin/observe): $archived of $N declined"
python3 - "$tmp/archive.jsonl" "$N" <<'PY'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
bad = [e["id"] for e in entries if e["job"]["id"] != e["id"] or e["status"] != "archived" or not e["error"].startswith("declined")]
have = {e["job"]["id"] for e in entries}
gone = sorted(set("charge-%d" % i for i in range(1, n + 1)) - have, key=lambda s: int(s.split("-")[1]))
print("round trip: %d entries, %d whose job.id, status or error is wrong" % (len(entries), len(bad)))
print("silently dropped from the archive: %d %s" % (len(gone), (gone[:5] + ["..."] if len(gone) > 5 else gone)))
ok = not bad and len(entries) == min(n, 9999) and len(gone) == n - len(entries)
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
