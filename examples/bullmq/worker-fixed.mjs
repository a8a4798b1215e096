// The payment worker of worker.mjs with what a senior engineer changes, and
// nothing else; each FIX names the failure it prevents. faultline drills it in
// drill-fixed.yaml (expected to PASS). The retry policy itself travels with
// each job, set by the producer (BullMQ's job options): in the drills, the
// inject preset's options,
//
//   {attempts: 6, backoff: {type: "charge", delay: 500}}
//
// six attempts, 0.5 s, 1 s, 2 s, 4 s, 8 s apart (and up to half as long again,
// jittered) by the "charge" backoff below: the fifth attempt comes 7.5 s or
// more after the first failure, so a gateway down for a few seconds is waited
// out, not dead-lettered (BullMQ's default is one attempt: every failure is
// final).
//
//   REDIS_URL    redis://host:port/db        QUEUE        the queue's name
//   PAYMENT_URL  the payment gateway         TIME_SCALE   the drill's time scale (default 1)
import { UnrecoverableError, Worker } from 'bullmq';

const connection = { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
const timeScale = Number(process.env.TIME_SCALE) || 1;

const worker = new Worker(process.env.QUEUE ?? 'payments', async job => {
  const { id, payload, idempotency_key: key } = job.data;
  let res;
  try {
    res = await fetch(process.env.PAYMENT_URL, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'X-Faultline-Job': id,
        // FIX: a charge that timed out or answered 5xx may have gone through;
        // with the key, its retry is a replay, not a second charge.
        'Idempotency-Key': key || id,
      },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(2000 / timeScale),
    });
  } catch (err) {
    throw new Error(`payment call failed: ${err.name}: ${err.message}`); // transient: retried
  }
  if (res.ok) return res.json();
  const text = (await res.text()).slice(0, 300);
  // FIX: a declined card (402) or a refused key (401/403) fails the same way
  // every time: UnrecoverableError fails the job at once, its remaining
  // attempts unused (a plain Error would retry a decline up to 6 times).
  if (res.status === 402 || res.status === 401 || res.status === 403 ||
      (res.status < 500 && res.status !== 408 && res.status !== 429)) {
    throw new UnrecoverableError(`payment refused: HTTP ${res.status}: ${text}`);
  }
  throw new Error(`payment failed: HTTP ${res.status}: ${text}`); // 5xx, 408, 429: retried
}, {
  connection,
  settings: {
    // FIX: the producer's backoff {type: "charge", delay}: exponential, with
    // jitter so that jobs failed together are not retried together (up to
    // half as long again, never shorter than delay * 2^(n-1)).
    backoffStrategy: (attemptsMade, type, err, job) => {
      const base = (job?.opts.backoff?.delay ?? 500) * 2 ** (attemptsMade - 1);
      return Math.round(base * (1 + Math.random() / 2) / timeScale);
    },
  },
  // FIX: a worker killed -9 leaves its active jobs locked until the lock
  // expires (lockDuration, 30 s by default), and they are moved back to wait
  // only by a later stalled-jobs check (stalledInterval, 30 s by default):
  // up to a minute in which the jobs are neither running nor queued. 5 s and
  // 2.5 s bring them back within about 10 s. The lock is renewed every
  // lockDuration/2 while a job runs, so a long charge keeps it. Whole
  // milliseconds: BullMQ passes them to Redis' PX, and a fraction (312.5)
  // makes every stalled check fail ("ERR value is not an integer"), so the
  // killed worker's jobs are never recovered.
  lockDuration: Math.round(5000 / timeScale),
  stalledInterval: Math.round(2500 / timeScale),
  // BullMQ fails a job that stalls more than maxStalledCount times (default
  // 1, kept): a job that kills its worker each time it runs ends in the
  // failed set, "job stalled more than allowable limit".
  maxStalledCount: 1,
});

worker.on('completed', job => console.log(`${job.id} has completed`));
worker.on('failed', (job, err) => console.log(`${job?.id} has failed with ${err.message}`));

// FIX: on SIGTERM, finish the charges in progress before exiting (the
// default worker dies mid-charge, and its jobs wait for the stalled check).
process.on('SIGTERM', async () => {
  await worker.close();
  process.exit(0);
});
