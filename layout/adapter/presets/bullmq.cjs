// faultline's adapter program for BullMQ (Node), written against bullmq 5.81.5.
//
//   node bullmq.cjs version|inject|dlq|ready
//
// faultline writes this file to a temporary folder and runs it with the
// team's own bullmq, loaded from FAULTLINE_PRESET_DIR (the project's folder,
// whose node_modules holds it; default the working directory).
//
//   version  prints "bullmq <version>"; exits 1 with a reason if bullmq cannot be loaded.
//   inject   reads job documents, one JSON object per line on stdin, and adds each
//            with Queue.add(FAULTLINE_PRESET_JOB or the document's task, the document,
//            {...FAULTLINE_PRESET_OPTIONS, jobId: the document's id}): BullMQ's job ID
//            is faultline's. Answers "ok" or the error, one line per line, in order.
//   dlq      prints every job of the queue's failed set, one JSON line each:
//            {"id", "job", "error", "error_class", "retries", "failed_at", "status": "failed"}.
//   ready    exits 0 when at least FAULTLINE_PRESET_COPIES (default 1) Workers of the
//            queue are connected (Queue.getWorkers: Redis' CLIENT LIST, by the name each
//            Worker gives its blocking connection), else 1.
//
// Environment: FAULTLINE_REDIS_URL, FAULTLINE_PRESET_QUEUE, FAULTLINE_PRESET_JOB
// ("{task}" or "" for the document's task), FAULTLINE_PRESET_OPTIONS (JobsOptions, JSON),
// FAULTLINE_PRESET_PREFIX (default "bull"), FAULTLINE_PRESET_DIR, FAULTLINE_PRESET_COPIES.
//
// What it writes to Redis: inject writes what Queue.add writes (the job hash
// <prefix>:<queue>:<id>, the wait list or the delayed/prioritized set, the id
// counter, the events stream, the marker, and the meta hash <prefix>:<queue>:meta
// with BullMQ's version); it refuses a job whose hash exists already, which
// BullMQ would silently keep in place of the new one. dlq, ready and version
// write nothing (skipMetasUpdate).
'use strict';

const path = require('path');
const readline = require('readline');

const mode = process.argv[2];
const env = process.env;

function fail(message) {
  process.stderr.write(`bullmq preset: ${String(message).replace(/\s*\n\s*/g, ' ')}\n`);
  process.exit(1);
}

// The team's bullmq, from its project's node_modules.
let bullmq, version;
try {
  const dir = path.resolve(env.FAULTLINE_PRESET_DIR || process.cwd());
  const req = require('module').createRequire(path.join(dir, 'x.js'));
  bullmq = req('bullmq');
  version = req('bullmq/package.json').version;
} catch (err) {
  fail(`cannot load bullmq from ${env.FAULTLINE_PRESET_DIR || process.cwd()} (npm ci there?): ${err.message}`);
}

if (mode === 'version') {
  process.stdout.write(`bullmq ${version}\n`);
  process.exit(0);
}
if (!['inject', 'dlq', 'ready'].includes(mode)) fail(`usage: node bullmq.cjs version|inject|dlq|ready (got ${mode})`);

const queueName = env.FAULTLINE_PRESET_QUEUE;
if (!queueName) fail('FAULTLINE_PRESET_QUEUE is not set');
const prefix = env.FAULTLINE_PRESET_PREFIX || 'bull';
// One connection (ioredis, made by bullmq from the URL), reused. A Redis
// that stays away for 2 s is given up (every later command then fails at
// once: each line still gets its answer) rather than waited for forever.
// The read-only modes do not write the queue's meta hash, as a new Queue
// otherwise does.
const connection = { url: env.FAULTLINE_REDIS_URL || 'redis://127.0.0.1:6379/0', maxRetriesPerRequest: 1,
  connectTimeout: 5000, retryStrategy: times => (times > 10 ? null : 200) };
if (mode !== 'inject') setTimeout(() => fail(`no answer from Redis within 20 s (${mode})`), 20000).unref();
const queue = new bullmq.Queue(queueName, { connection, prefix, skipMetasUpdate: mode !== 'inject' });
queue.on('error', () => {}); // each command's own error is what is reported

async function done(code) {
  await queue.close().catch(() => {});
  process.exit(code);
}

// inject: one queue.add per line, answered in order.
async function inject() {
  let options = {};
  try {
    options = JSON.parse(env.FAULTLINE_PRESET_OPTIONS || '{}') || {};
  } catch (err) {
    fail(`FAULTLINE_PRESET_OPTIONS is not JSON: ${err.message}`);
  }
  const job = env.FAULTLINE_PRESET_JOB || '';
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    let answer = 'ok';
    try {
      const doc = JSON.parse(line);
      if (!doc || typeof doc.id !== 'string' || doc.id === '') throw new Error('job document: no id');
      const name = job ? job.replaceAll('{task}', doc.task ?? '') : doc.task || 'job';
      // BullMQ ignores an add whose jobId it has already (Queue.add returns the
      // old job): an earlier run's job of that ID would take this one's place.
      const client = await queue.client;
      if (await client.exists(`${prefix}:${queueName}:${doc.id}`)) {
        throw new Error(`job ${doc.id} is already in queue ${queueName} (prefix ${prefix}): BullMQ would ignore this add`);
      }
      // The options as the producer passes them; the job ID is always faultline's.
      await queue.add(name, doc, { ...options, jobId: doc.id });
    } catch (err) {
      answer = String(err?.message ?? err).replace(/\s*\n\s*/g, ' ') || 'error';
    }
    process.stdout.write(answer + '\n');
  }
  await done(0);
}

// The failed set and its jobs' hashes, read in one script: one instant of the
// set. (bullmq 5.81.5's own queue.getFailed(0, -1) is also one script,
// commands/getJobs-1.lua, but it skips an ID whose job hash is missing; this
// one returns it, so it is printed, not dropped.)
const READ_FAILED = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #ids, 2 do
  local key = ARGV[1] .. ids[i]
  local kind = redis.call('TYPE', key).ok
  local fields = {}
  if kind == 'hash' then
    fields = redis.call('HMGET', key, 'data', 'failedReason', 'atm', 'finishedOn', 'stacktrace')
  end
  out[#out + 1] = {ids[i], ids[i + 1], kind, fields}
end
return out`;

function rfc3339(ms) {
  const n = Number(ms);
  return Number.isFinite(n) && n > 0 ? new Date(n).toISOString() : undefined;
}

// The class of the error the job failed with: the first word of the last
// stack BullMQ kept ("UnrecoverableError: card declined"); it stores the
// message alone as failedReason.
function errorClass(stacktrace) {
  try {
    const stacks = JSON.parse(stacktrace || '[]');
    const m = /^([A-Za-z_$][\w$.]*)(?::|$)/.exec(String(stacks[stacks.length - 1] ?? ''));
    if (m) return m[1];
  } catch (_) { /* no stack: Error */ }
  return 'Error';
}

async function dlq() {
  const base = `${prefix}:${queueName}:`;
  const client = await queue.client;
  const rows = await client.eval(READ_FAILED, 1, base + 'failed', base);
  const out = [];
  for (const [id, score, kind, [data, reason, atm, finishedOn, stacktrace]] of rows) {
    const failedAt = rfc3339(finishedOn) ?? rfc3339(score);
    if (kind !== 'hash') {
      // The failed set names a job whose hash is gone (or is not a hash): the
      // job's ID and when it failed (the set's score) are all that is left.
      const what = kind === 'none' ? 'is missing' : `is a ${kind}, not a job hash`;
      out.push({ id, job: null, error: `could not decode: ${base}${id} ${what} (the failed set names it)`,
        status: 'failed', failed_at: failedAt });
      continue;
    }
    const cls = errorClass(stacktrace);
    const entry = { id, job: null, error: `${cls}: ${reason ?? ''}`, error_class: cls,
      retries: Number.parseInt(atm ?? '0', 10) || 0, failed_at: failedAt, status: 'failed' };
    try {
      entry.job = JSON.parse(data);
    } catch (err) {
      entry.raw = data ?? '';
      entry.error = `could not decode: job data: ${err.message} (${entry.error})`;
    }
    out.push(entry);
  }
  process.stdout.write(out.map(e => JSON.stringify(e) + '\n').join(''));
  await done(0);
}

async function ready() {
  const want = Number.parseInt(env.FAULTLINE_PRESET_COPIES || '1', 10) || 1;
  const workers = await queue.getWorkers();
  if (workers.length >= want) await done(0);
  process.stderr.write(`${workers.length} of ${want} BullMQ worker(s) connected to queue ${queueName} (prefix ${prefix})\n`);
  await done(1);
}

({ inject, dlq, ready })[mode]().catch(err => fail(err?.message ?? err));
