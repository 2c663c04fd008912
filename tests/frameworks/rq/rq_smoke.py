"""RQ end to end over redis-py, in RESP2 and RESP3: jobs enqueued (plain,
with dependencies, at a time, failing with retries), run by a burst
worker, results, registries and job metadata checked."""
import sys
from datetime import timedelta

import redis
from rq import Queue, Retry, SimpleWorker
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, FinishedJobRegistry

import rqjobs


def check(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def run(port, protocol):
    conn = redis.Redis(host="127.0.0.1", port=port, protocol=protocol)
    conn.flushall()
    q = Queue("smoke", connection=conn)
    jobs = [q.enqueue(rqjobs.double, i) for i in range(30)]
    after = q.enqueue(rqjobs.double, 100, depends_on=jobs[0])
    bad = q.enqueue(rqjobs.boom, retry=Retry(max=2))
    later = q.enqueue_in(timedelta(seconds=1), rqjobs.double, 7)
    check(q.count == 31, f"queue count {q.count}")  # 30 + bad; the dependent waits, the scheduled one is not due
    worker = SimpleWorker([q], connection=conn)
    worker.work(burst=True, with_scheduler=True)
    for i, job in enumerate(jobs):
        job.refresh()
        check(job.get_status() == JobStatus.FINISHED, f"job {i} {job.get_status()}")
        check(job.return_value() == i * 2, f"job {i} returned {job.return_value()}")
    after.refresh()
    check(after.get_status() == JobStatus.FINISHED and after.return_value() == 200, f"dependent {after.get_status()}")
    bad.refresh()
    check(bad.get_status() == JobStatus.FAILED, f"bad {bad.get_status()}")
    check(bad.id in FailedJobRegistry(queue=q).get_job_ids(), "bad not in failed registry")
    check(len(FinishedJobRegistry(queue=q)) >= 31, "finished registry")
    fetched = Job.fetch(jobs[3].id, connection=conn)
    check(fetched.args == (3,), f"fetched args {fetched.args}")
    # The scheduled job: run the worker again once it is due.
    import time
    deadline = time.time() + 15
    while later.refresh() or later.get_status() != JobStatus.FINISHED:
        if time.time() > deadline:
            check(False, f"scheduled job {later.get_status()}")
        worker = SimpleWorker([q], connection=conn)
        worker.work(burst=True, with_scheduler=True)
        time.sleep(0.3)
    check(later.return_value() == 14, "scheduled result")
    conn.close()


for port in map(int, sys.argv[1:]):
    for protocol in (2, 3):
        run(port, protocol)
        print(f"rq smoke (port {port}, RESP{protocol}): ok")
