"""Celery end to end: a solo worker on the redis broker (kombu: lists read
with BRPOP, pub/sub, the unacked-message hash and sorted set) and the redis
result backend (results, chord counters), with retries, a group, a chord
and a failing task. Usage: celery_smoke.py PORT."""
import os
import subprocess
import sys

port = sys.argv[1]
os.environ["TESSERA_PORT"] = port
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from celery import chord, group  # noqa: E402

import celery_app  # noqa: E402

worker = subprocess.Popen(
    [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "--pool=solo",
     "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"],
    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    cwd=os.path.dirname(os.path.abspath(__file__)))
try:
    results = [celery_app.add.delay(i, i) for i in range(20)]
    values = [r.get(timeout=60) for r in results]
    assert values == [2 * i for i in range(20)], values
    assert celery_app.flaky.delay(4).get(timeout=60) == 40
    assert group(celery_app.add.s(i, 1) for i in range(5)).apply_async().get(timeout=60) == [1, 2, 3, 4, 5]
    assert chord(celery_app.add.s(i, i) for i in range(5))(celery_app.total.s()).get(timeout=60) == 20
    bad = celery_app.boom.delay()
    try:
        bad.get(timeout=60)
        raise AssertionError("boom succeeded")
    except ValueError as e:
        assert "always fails" in str(e), e
    assert bad.state == "FAILURE", bad.state
    print("celery smoke: ok")
finally:
    worker.terminate()
    try:
        out, _ = worker.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        out, _ = worker.communicate()
    if out.strip():
        print("worker output:\n" + out[-4000:], file=sys.stderr)
