"""A fuzz over ``config.json``: whatever values a checkpoint's config holds, loading it ends in
the model, a ``CheckpointError`` that names the config file, or an ``HParamsError`` that names
the key; never another exception, a hang or a memory blow-up.

Each family's tiny folder (the broken corpus' valid BERT, ``tests/fixtures/families``, the
KerasHub preset) is copied to ``tmp_path``; hypothesis (derandomized, a fixed number of
examples) sets a few of its config's keys, and a few others, to values of every kind: strings,
floats (NaN and infinities too), booleans, null, lists, objects, integers huge and negative,
values nested past texkit's depth limit, and keys removed. The whole loop runs in one sandbox
case (``tests/hostile.py``), so a regression that hangs or allocates without bound fails the
test instead of taking the machine; that sandbox is the test's own, run as a job of
``tests/background.py`` while other tests run.
"""

from __future__ import annotations

import json
import os
import shutil

from tests.background import job_result, process_job
from tests.hostile import Sandbox

CORPUS = os.path.join(os.path.dirname(__file__), "..", "fixtures")
FOLDERS = {
    "bert": os.path.join(CORPUS, "broken", "checkpoints", "valid"),
    **{name: os.path.join(CORPUS, "families", name)
       for name in ("roberta", "distilbert", "electra", "albert", "gpt2", "t5", "t5_v1")},
    "keras_hub": os.path.join(CORPUS, "keras_hub", "bert_tiny"),
}  # fmt: skip
EXAMPLES = 35  # per family: about 25 s in all
# Keys a config may hold that the fixtures' configs may not.
EXTRA_KEYS = (
    "model_type", "num_decoder_layers", "pad_token_id", "bos_token_id", "eos_token_id",
    "decoder_start_token_id", "position_embedding_type", "n_inner", "activation_function",
    "feed_forward_proj", "tie_word_embeddings", "scale_decoder_outputs", "embedding_size",
    "num_hidden_groups", "inner_group_num", "sinusoidal_pos_embds", "layer_norm_eps",
)  # fmt: skip
REMOVED = "<removed>"


def _strategies():
    from hypothesis import strategies as st

    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from([0, 1, -1, 2, 3, 7, 64, 2**31, 2**63, 10**12, -(10**29)]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.5, 1.0, 1e-12, 1e12, -0.1]),
        st.text(max_size=8),
        st.sampled_from(["7", "1.5", "gelu", "relu", "gated-gelu", "absolute", "bert", "t5", ""]),
    )
    values = st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=4), children, max_size=3)
        ),
        max_leaves=6,
    )
    nested = st.integers(min_value=60, max_value=2000).map(lambda depth: _nested(depth))
    many_digits = st.integers(min_value=31, max_value=2000).map(lambda digits: 10**digits)
    return st.one_of(values, nested, many_digits, st.just(REMOVED))


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _edited(config: dict, edits: list, keras_hub: bool) -> dict:
    config = json.loads(json.dumps(config))
    for key, value, inner in edits:
        target = config["config"] if keras_hub and inner else config
        if value == REMOVED:
            target.pop(key, None)
        else:
            target[key] = value
    return config


def fuzz(folders: dict, examples: int) -> list:
    """The sandbox case: for each ``{family: folder}``, ``examples`` edits of its config.json,
    each loaded with ``texkit.pretrained.from_pretrained``; returns the problems found."""
    problems: list = []
    for family, folder in folders.items():
        _fuzz_one(family, folder, examples, problems)
    return problems


def _fuzz_one(family: str, folder: str, examples: int, problems: list) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import texkit as tx
    from texkit.hparams import HParamsError
    from texkit.pretrained import CheckpointError

    path = os.path.join(folder, "config.json")
    with open(path) as f:
        original = json.load(f)
    keras_hub = family == "keras_hub"
    keys = sorted({*(original["config"] if keras_hub else original), *EXTRA_KEYS})
    edit = st.tuples(st.sampled_from(keys), _strategies(), st.booleans())

    @settings(max_examples=examples, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.lists(edit, min_size=1, max_size=3))
    def run(edits):
        with open(path, "w") as f:
            json.dump(_edited(original, edits, keras_hub), f)
        shown = f"{family} {repr(edits)[:300]}"
        try:
            tx.pretrained.from_pretrained(folder)
            return
        except CheckpointError as error:
            message = str(error)
            if path not in message:
                problems.append(f"{shown}: does not name {path}: {message[:1000]}")
        except HParamsError as error:
            message = str(error)
            if not error.path:
                problems.append(f"{shown}: names no key: {message[:1000]}")
        except Exception as error:  # noqa: BLE001 - every escape is a problem
            message = str(error)
            problems.append(f"{shown}: {type(error).__name__}: {message[:1000]}")
        if len(message) > 2000:
            problems.append(f"{shown}: a message of {len(message):,} characters")

    run()
    with open(path, "w") as f:
        json.dump(original, f)


def _fuzz_job(folder):
    """The job: copies the folders into ``folder`` and runs :func:`fuzz` in a new sandbox."""
    folders = {}
    for family, source in FOLDERS.items():
        folders[family] = str(folder / family)
        shutil.copytree(source, folders[family])
    box = Sandbox()
    try:
        return box.run(fuzz, folders, EXAMPLES, timeout=240)
    finally:
        if box.process is not None:
            box.process.stdin.close()  # the child's loop ends and it exits on its own
            box.process.wait(timeout=60)
        box.stop()


FUZZ_TEST = "test_any_config_json_ends_in_the_model_or_an_error_naming_the_file_or_key"
process_job(FUZZ_TEST, _fuzz_job)


def test_any_config_json_ends_in_the_model_or_an_error_naming_the_file_or_key():
    outcome = job_result(FUZZ_TEST)
    assert outcome.error is None, f"{outcome.raised}: {outcome.message}"
    assert outcome.value == [], "\n".join(outcome.value[:20])
