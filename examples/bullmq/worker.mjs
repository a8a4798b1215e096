// The payment worker as BullMQ's getting-started guide teaches it: a Worker
// with a processor function and a connection, nothing else. Every option is
// BullMQ's default. faultline drills it in drill-default.yaml (expected to FAIL).
//
//   REDIS_URL    redis://host:port/db        QUEUE        the queue's name
//   PAYMENT_URL  the payment gateway         TIME_SCALE   the drill's time scale (default 1)
import { Worker } from 'bullmq';

const connection = { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
const timeScale = Number(process.env.TIME_SCALE) || 1;

const worker = new Worker(process.env.QUEUE ?? 'payments', async job => {
  // job.data is the charge: {id, task, payload, idempotency_key}.
  const res = await fetch(process.env.PAYMENT_URL, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Faultline-Job': job.data.id },
    body: JSON.stringify(job.data.payload),
    signal: AbortSignal.timeout(2000 / timeScale),
  });
  if (!res.ok) {
    throw new Error(`payment failed: HTTP ${res.status}`);
  }
  return res.json();
}, { connection });

worker.on('completed', job => console.log(`${job.id} has completed`));
worker.on('failed', (job, err) => console.log(`${job?.id} has failed with ${err.message}`));
