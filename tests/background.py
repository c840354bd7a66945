"""Jobs of separate processes that run while other tests do.

A test whose work is done by other processes (a worker cluster on 127.0.0.1, a fresh interpreter
running an example) and needs nothing from the test process registers that work as a job:
``tests/conftest.py`` starts the jobs of the collected tests once the session is collected, one
after another in a thread, so that they run on the core the tests (one process) leave idle. The
test then reads its job's result and checks it. A test that times something (how fast a failure
is noticed) must not be a job, and calls :func:`wait_for_process_jobs` first: it must not share
the machine with the jobs.
"""

import concurrent.futures
import pathlib
import tempfile

_JOBS = {}
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="process-jobs")
_folder = tempfile.TemporaryDirectory(prefix="texkit-process-jobs-")


def process_job(test_id, function, *args):
    """Registers ``function(folder, *args)`` as the job of the test (or parametrized case)
    ``test_id``, as pytest names it (``test_name[param]``); ``folder`` is a new empty folder."""
    _JOBS.setdefault(test_id, [function, args, None])


def start_process_jobs(test_ids):
    """Starts the jobs of ``test_ids`` (those that have one, each once), in this order."""
    for test_id in test_ids:
        job = _JOBS.get(test_id)
        if job is not None and job[2] is None:
            folder = tempfile.mkdtemp(dir=_folder.name)
            job[2] = _pool.submit(job[0], pathlib.Path(folder), *job[1])


def job_result(test_id, timeout=900):
    """What the job of ``test_id`` returned (or raised), started now if it was not already."""
    start_process_jobs([test_id])
    return _JOBS[test_id][2].result(timeout=timeout)


def wait_for_process_jobs(timeout=900):
    """Waits until every job started so far has ended (whatever its outcome)."""
    futures = [job[2] for job in _JOBS.values() if job[2] is not None]
    concurrent.futures.wait(futures, timeout=timeout)


def stop_process_jobs():
    """Cancels the jobs not started yet: a session that stops early does not wait for them."""
    _pool.shutdown(wait=False, cancel_futures=True)
