"""Faults of a running job: preemption (a real SIGTERM), a worker killed mid-run, a worker that
stops answering (SIGSTOP) and one paused for less than the heartbeat timeout.

Every run here is a separate process (tests/run/train_job.py, or ``texkit train``) training the
toy experiment; the resumed runs must end with the weights of a run that was never interrupted.
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import yaml

import texkit as tx

from ..background import job_result, process_job, wait_for_process_jobs
from .cluster import worker_environments
from .test_trainer import NO_DROPOUT, _finish, _run_job, _start_step
from .toy_experiment import toy_experiment as experiment


def _checkpoints(folder):
    return sorted(
        int(name[5:-6])
        for name in os.listdir(folder)
        if name.startswith("ckpt-") and name.endswith(".index")
    )


def _preempted_step(output):
    return int(output.split("preempted at step ")[1].split()[0])


def _assert_equal_weights(a, b, atol=0.0):
    a, b = np.load(a), np.load(b)
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_allclose(a[key], b[key], rtol=0, atol=atol)


def _one_worker(model_dir, **run):
    hparams = experiment(model_dir, train_steps=60, checkpoint_every_steps=20, deterministic=True)
    # The data as a function: each fit builds its pipeline afresh, as texkit's data classes do
    # (see the Trainer's docstring on tf.data.Dataset objects that reshuffle).
    hparams["data"]["hparams"] = {"per_replica": True}
    hparams["run"].update(run)
    return hparams


def _preempted_run(folder):
    """The runs of the test below, as a job (tests/background.py): preempted, resumed and,
    meanwhile, uninterrupted; the outputs and checkpoints after each."""
    hparams = _one_worker(str(folder / "run"), preemption=True)
    whole = _run_job(_one_worker(str(folder / "whole")), folder / "whole.npz", wait=False)
    stopped = _run_job(hparams, folder / "run.npz", sigterm_at_step=23)
    stopped_with = (_checkpoints(folder / "run"), (folder / "run.npz").exists())
    resumed = _run_job(hparams, folder / "run.npz")
    return {
        "folder": folder,
        "stopped": (*stopped, *stopped_with),
        "resumed": (*resumed, _checkpoints(folder / "run")),
        "whole": _finish(whole),
    }


process_job("test_sigterm_saves_at_the_next_step_and_the_restart_loses_no_step", _preempted_run)


def test_sigterm_saves_at_the_next_step_and_the_restart_loses_no_step():
    runs = job_result("test_sigterm_saves_at_the_next_step_and_the_restart_loses_no_step")
    code, output, checkpoints, weights_saved = runs["stopped"]
    assert code == tx.run.Preempted.exit_code == 75, output
    # The signal came at the end of step 23, after the preemption check of that step.
    assert _preempted_step(output) == 24, output
    assert checkpoints == [20, 24]
    assert not weights_saved
    code, output, checkpoints = runs["resumed"]
    assert code == 0, output
    assert _start_step(output) == 24  # not a multiple of checkpoint_every_steps
    assert checkpoints == [24, 40, 60]
    code, output = runs["whole"]
    assert code == 0, output
    _assert_equal_weights(runs["folder"] / "run.npz", runs["folder"] / "whole.npz")


def test_without_run_preemption_sigterm_ends_the_process_as_usual(tmp_path):
    hparams = _one_worker(str(tmp_path / "run"))
    code, output = _run_job(hparams, tmp_path / "run.npz", sigterm_at_step=23)
    assert code == -signal.SIGTERM, output
    assert _checkpoints(tmp_path / "run") == [20]


def _two_workers(hparams, tmp_path, name, **options):
    return [_finish(process) for process in _start_two_workers(hparams, tmp_path, name, **options)]


def _multi_worker(model_dir, train_steps=40):
    hparams = experiment(model_dir, train_steps=train_steps, checkpoint_every_steps=10)
    hparams["model"]["hparams"] = NO_DROPOUT
    hparams["data"]["hparams"] = {"per_replica": True}
    hparams["distribution"] = {"type": "multi_worker"}
    return hparams


def _preempted_cluster(folder):
    """The runs of the test below, as a job (tests/background.py): a cluster preempted, resumed
    and, meanwhile, another one uninterrupted; the outputs and checkpoints after each."""
    hparams = _multi_worker(str(folder / "run"))
    hparams["run"]["preemption"] = True
    whole = _start_two_workers(_multi_worker(str(folder / "whole")), folder, "whole")
    # Only the second worker (not the one writing checkpoints) gets the signal.
    stopped = _two_workers(hparams, folder, "run", sigterm_at_step=13, signal_task=1)
    checkpoints = _checkpoints(folder / "run")
    resumed = _two_workers(hparams, folder, "run")
    return {
        "folder": folder,
        "stopped": (stopped, checkpoints),
        "resumed": resumed,
        "whole": [_finish(process) for process in whole],
    }


process_job("test_sigterm_to_one_worker_stops_both_at_the_same_step", _preempted_cluster)


def test_sigterm_to_one_worker_stops_both_at_the_same_step():
    runs = job_result("test_sigterm_to_one_worker_stops_both_at_the_same_step")
    results, checkpoints = runs["stopped"]
    for code, output in results:
        assert code == 75, output
        assert _preempted_step(output) == 14, output
    assert checkpoints == [10, 14]
    for code, output in runs["resumed"]:
        assert code == 0 and _start_step(output) == 14, output
    for code, output in runs["whole"]:
        assert code == 0, output
    folder = runs["folder"]
    _assert_equal_weights(folder / "run0.npz", folder / "whole0.npz", atol=1e-6)
    _assert_equal_weights(folder / "run0.npz", folder / "run1.npz")


def test_texkit_train_sent_sigterm_from_outside_exits_75_with_a_checkpoint(tmp_path):
    from tests.test_cli import TOY, _write_experiment

    config = _write_experiment(tmp_path, train_steps=1_000_000, checkpoint_every_steps=20)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "texkit.cli",
            "train",
            config,
            "run.preemption=true",
            "--include",
            TOY,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    model_dir = tmp_path / "model"
    deadline = time.monotonic() + 180
    # Any checkpoint will do: on a fast machine the first ones are rotated away within
    # a fraction of a second, so waiting for one named file can miss it.
    while not (model_dir.is_dir() and _checkpoints(model_dir)):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()  # never wait for the million steps to end
            raise AssertionError(process.communicate())
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)  # as a cloud VM does before preemption
    _, error = process.communicate(timeout=120)
    assert process.returncode == 75, error
    step = int(error.split("preempted (SIGTERM) after step ")[1].split(";")[0])
    assert step >= 20 and step in _checkpoints(model_dir)
    assert "Traceback" not in error
    assert error.strip().splitlines()[-1].startswith("texkit train: preempted (SIGTERM)")


def _start_two_workers(hparams, tmp_path, name, **options):
    return [
        _run_job(hparams, tmp_path / f"{name}{index}.npz", env=env, wait=False, **options)
        for index, env in enumerate(worker_environments(2))
    ]


def _wait_for_exit(process, timeout):
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        assert time.monotonic() < deadline, "the process did not end"
        time.sleep(0.1)
    return time.monotonic()


class _TimedLines:
    """The lines a process writes on its stdout, each with the time it was read."""

    def __init__(self, process):
        self.lines = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process):
        for line in process.stdout:
            self.lines.append((time.monotonic(), line))

    def text(self):
        self._thread.join(timeout=30)
        return "".join(line for _, line in self.lines)

    def first(self, words):
        return next((at for at, line in self.lines if words in line), None)


def test_a_worker_killed_mid_run_fails_the_other_at_once_and_both_resume(tmp_path):
    wait_for_process_jobs()  # the timings below are of a machine running this test alone
    hparams = _multi_worker(str(tmp_path / "run"))
    hparams["distribution"]["heartbeat_seconds"] = 5  # the reset connection tells, not this
    chief, killed = _start_two_workers(hparams, tmp_path, "run", kill_at_step=15, signal_task=1)
    lines = _TimedLines(chief)
    killed_at = _wait_for_exit(killed, 300)
    killed.communicate()
    _wait_for_exit(chief, 120)
    output = lines.text()
    assert killed.returncode == -signal.SIGKILL
    assert chief.returncode == 75, output
    assert "lost worker 1 of the cluster" in output, output
    assert f"the last checkpoint is {tmp_path / 'run' / 'ckpt-10'}" in output, output
    # texkit's message alone: not TensorFlow's collective executor and gRPC log lines before it.
    assert not re.search(r"^[IWE]\d{4} ", output, re.M), output
    # The message, not the exit (tests/run/train_job.py exits as a user's script would, and an
    # ordinary exit can wait for tf.data's threads).
    failed_at = lines.first("lost worker 1")
    assert failed_at - killed_at < 30, "the survivor should fail at once, not wait"
    # Both started again: the run resumes at step 10 and ends as an uninterrupted one.
    for code, output in _two_workers(hparams, tmp_path, "run"):
        assert code == 0 and _start_step(output) == 10, output
    single = _multi_worker("")
    single["distribution"] = {"type": "default"}
    trainer = tx.run.Trainer.from_hparams(single)
    trainer.train()
    resumed = np.load(tmp_path / "run0.npz")
    for index, key in enumerate(resumed):
        np.testing.assert_allclose(resumed[key], trainer.model.weights[index].numpy(), atol=1e-5)


def test_a_worker_that_stops_answering_is_found_by_the_heartbeat(tmp_path):
    # A stopped process keeps its connections open, as a machine that vanished from the network
    # does: no connection reset tells the other worker; only the heartbeats can.
    wait_for_process_jobs()  # the timings below are of a machine running this test alone
    hparams = _multi_worker(str(tmp_path / "run"), train_steps=400)
    hparams["distribution"]["heartbeat_seconds"] = 2
    chief, silent = _start_two_workers(hparams, tmp_path, "run", step_seconds=0.05)
    output = _TimedLines(chief)
    deadline = time.monotonic() + 300
    while not ((tmp_path / "run").is_dir() and _checkpoints(tmp_path / "run")):
        assert time.monotonic() < deadline and chief.poll() is None, output.text()
        time.sleep(0.1)
    silent.send_signal(signal.SIGSTOP)
    try:
        stopped_at = time.monotonic()
        exited_at = _wait_for_exit(chief, 120)
    finally:
        silent.kill()
        silent.communicate()
    text = output.text()
    assert chief.returncode == 75, text
    assert "lost worker 1 of the cluster" in text, text
    # TensorFlow's coordination service, told heartbeat_seconds by texkit, finds it.
    assert "unhealthy (stopped sending heartbeats)" in text, text
    found_at = output.first("lost worker 1")
    print(
        f"the silent worker was found after {found_at - stopped_at:.1f} s; the process "
        f"exited {exited_at - found_at:.1f} s later"
    )
    # 2-3 s on an idle machine; TensorFlow's own timeout, unset, is 10 s.
    assert found_at - stopped_at < 20, text


def _texkit_train_workers(hparams, folder):
    """Two ``texkit train`` processes of ``hparams`` (written to ``folder``) in a new cluster."""
    from tests.test_cli import TOY

    config = folder / "experiment.yaml"
    config.write_text(yaml.safe_dump(hparams))
    command = [sys.executable, "-m", "texkit.cli", "train", str(config), "--include", TOY]
    return [
        subprocess.Popen(
            command,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for env in worker_environments(2)
    ]


def _wait_for_a_checkpoint(folder, chief):
    deadline = time.monotonic() + 300
    while not (folder.is_dir() and _checkpoints(folder)):
        if chief.poll() is not None or time.monotonic() > deadline:
            raise AssertionError("no checkpoint was written")
        time.sleep(0.1)


def _paused_and_stopped_clusters(folder):
    """The runs of the test below, as a job: a worker paused for less than heartbeat_seconds
    (but longer than TensorFlow's own 10 s), then a worker stopped for good."""
    hparams = _multi_worker(str(folder / "paused"), train_steps=120)
    hparams["distribution"]["heartbeat_seconds"] = 40
    stopped = None
    chief, paused = _texkit_train_workers(hparams, folder)
    try:
        _wait_for_a_checkpoint(folder / "paused", chief)
        paused.send_signal(signal.SIGSTOP)
        time.sleep(15)
        running = chief.poll() is None
        paused.send_signal(signal.SIGCONT)
        results = {"paused": [_finish(chief), _finish(paused)], "running": running}
        hparams = _multi_worker(str(folder / "stopped"), train_steps=1_000_000)
        hparams["distribution"]["heartbeat_seconds"] = 2
        chief, stopped = _texkit_train_workers(hparams, folder)
        _wait_for_a_checkpoint(folder / "stopped", chief)
        stopped.send_signal(signal.SIGSTOP)
        results["stopped"] = _finish(chief)
    finally:
        for process in (chief, paused, stopped):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    return results


process_job(
    "test_texkit_train_rides_out_a_pause_shorter_than_the_heartbeat_and_ends_on_a_lost_worker",
    _paused_and_stopped_clusters,
)


def test_texkit_train_rides_out_a_pause_shorter_than_the_heartbeat_and_ends_on_a_lost_worker():
    runs = job_result(
        "test_texkit_train_rides_out_a_pause_shorter_than_the_heartbeat_and_ends_on_a_lost_worker"
    )
    # Paused for 15 s while the chief waited in an all-reduce: TensorFlow's default timeout
    # (10 s) would have ended the run; heartbeat_seconds 40 lets it go on to its end.
    assert runs["running"]
    for code, output in runs["paused"]:
        assert code == 0, output
        assert json.loads(output.strip().splitlines()[-1])["step"] == 120, output
    # Stopped for good: texkit train names the worker, exits 75 at once, no traceback.
    code, output = runs["stopped"]
    assert code == 75, output
    assert (
        output.strip().splitlines()[-1].startswith("texkit train: lost worker 1 of the cluster")
    ), output
    assert "Traceback" not in output, output
