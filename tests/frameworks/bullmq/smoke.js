// BullMQ end to end: jobs added (plain, delayed, prioritized, with retries
// and a failing one), processed by a worker, results and events checked.
const { Queue, Worker, QueueEvents, FlowProducer } = require('bullmq');
const port = Number(process.argv[2]);
const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };

function fail(msg) { console.error('FAIL: ' + msg); process.exit(1); }

async function main() {
  const name = 'smoke';
  const queue = new Queue(name, { connection });
  const events = new QueueEvents(name, { connection });
  await events.waitUntilReady();
  const completedEvents = [];
  events.on('completed', ({ jobId }) => completedEvents.push(jobId));

  const attempts = {};
  const worker = new Worker(name, async (job) => {
    attempts[job.id] = (attempts[job.id] || 0) + 1;
    if (job.name === 'flaky' && attempts[job.id] < 3) throw new Error('try again');
    if (job.name === 'bad') throw new Error('always fails');
    await job.updateProgress(50);
    return { doubled: job.data.n * 2 };
  }, { connection, concurrency: 4 });

  const jobs = [];
  for (let i = 0; i < 50; i++) jobs.push(await queue.add('plain', { n: i }));
  jobs.push(await queue.add('delayed', { n: 100 }, { delay: 300 }));
  jobs.push(await queue.add('prio', { n: 200 }, { priority: 5 }));
  jobs.push(await queue.add('flaky', { n: 300 }, { attempts: 5, backoff: { type: 'fixed', delay: 50 } }));
  const bad = await queue.add('bad', { n: 400 }, { attempts: 2 });
  const bulk = await queue.addBulk([1, 2, 3].map((n) => ({ name: 'bulk', data: { n: 500 + n } })));
  jobs.push(...bulk);

  const deadline = Date.now() + 30000;
  for (;;) {
    const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed', 'prioritized');
    if (counts.completed === jobs.length && counts.failed === 1) break;
    if (Date.now() > deadline) fail('timed out: ' + JSON.stringify(counts));
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const j of jobs) {
    const job = await queue.getJob(j.id);
    const state = await job.getState();
    if (state !== 'completed') fail(`job ${j.id} is ${state}`);
    if (job.returnvalue.doubled !== j.data.n * 2) fail(`job ${j.id} returned ${JSON.stringify(job.returnvalue)}`);
    if (job.progress !== 50) fail(`job ${j.id} progress ${job.progress}`);
  }
  const flaky = jobs.find((j) => j.name === 'flaky');
  if (attempts[flaky.id] !== 3) fail('flaky ran ' + attempts[flaky.id] + ' times');
  const badJob = await queue.getJob(bad.id);
  if ((await badJob.getState()) !== 'failed' || badJob.failedReason !== 'always fails' || badJob.attemptsMade !== 2)
    fail('bad job: ' + (await badJob.getState()) + ' ' + badJob.failedReason + ' ' + badJob.attemptsMade);

  // A parent job that waits for its children (flows).
  const flow = new FlowProducer({ connection });
  const tree = await flow.add({ name: 'parent', queueName: name, data: { n: 1000 },
    children: [1, 2].map((n) => ({ name: 'child', queueName: name, data: { n } })) });
  const parentDeadline = Date.now() + 30000;
  for (;;) {
    const p = await queue.getJob(tree.job.id);
    if ((await p.getState()) === 'completed') break;
    if (Date.now() > parentDeadline) fail('flow parent stuck in ' + (await p.getState()));
    await new Promise((r) => setTimeout(r, 100));
  }
  const childValues = await (await queue.getJob(tree.job.id)).getChildrenValues();
  if (Object.keys(childValues).length !== 2) fail('children values ' + JSON.stringify(childValues));

  // Pausing, the repeatable/metrics bookkeeping and cleanup commands.
  await queue.pause();
  if (!(await queue.isPaused())) fail('not paused');
  await queue.resume();
  await queue.clean(0, 1000, 'completed');
  await queue.clean(0, 1000, 'failed');
  const left = await queue.getJobCounts('completed', 'failed');
  if (left.completed !== 0 || left.failed !== 0) fail('clean left ' + JSON.stringify(left));

  // Give QueueEvents (XREAD BLOCK on the events stream) time to catch up.
  const evDeadline = Date.now() + 10000;
  while (completedEvents.length < jobs.length && Date.now() < evDeadline) await new Promise((r) => setTimeout(r, 100));
  if (completedEvents.length < jobs.length) fail(`saw ${completedEvents.length} completed events of ${jobs.length}`);

  await worker.close();
  await events.close();
  await flow.close();
  await queue.obliterate({ force: true });
  await queue.close();
  console.log('bullmq smoke: ok');
}

main().catch((e) => fail(e && e.stack || String(e)));
