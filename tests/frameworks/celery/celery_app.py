"""The Celery application tests/frameworks/celery/celery_smoke.py runs: the
server under test is both the broker and the result backend."""
import os

from celery import Celery

port = os.environ["TESSERA_PORT"]
app = Celery("smoke", broker=f"redis://127.0.0.1:{port}/0", backend=f"redis://127.0.0.1:{port}/1")
app.conf.update(task_acks_late=True, broker_connection_retry_on_startup=True, result_expires=600)


@app.task
def add(x, y):
    return x + y


@app.task
def total(values):
    return sum(values)


@app.task(bind=True, max_retries=3, default_retry_delay=0.1)
def flaky(self, n):
    if self.request.retries < 2:
        raise self.retry(exc=ValueError("again"))
    return n * 10


@app.task
def boom():
    raise ValueError("always fails")
