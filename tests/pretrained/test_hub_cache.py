"""Checkpoints by name, from a real Hugging Face cache folder, offline.

The cache is laid out as ``huggingface_hub`` lays it out (``models--org--name/blobs/<sha256>``
holding the files, ``refs/main`` naming the revision, ``snapshots/<revision>/<file>`` symbolic
links into ``blobs/``), and a child process with ``HF_HOME`` pointing at it and
``HF_HUB_OFFLINE=1`` loads a model by its name through texkit.
"""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "families")
REVISION = "0123456789abcdef0123456789abcdef01234567"


def make_cache(home, repo, source):
    """``repo`` ("org/name") in a hub cache under ``home``, with ``source``'s files."""
    root = os.path.join(home, "hub", "models--" + repo.replace("/", "--"))
    snapshot = os.path.join(root, "snapshots", REVISION)
    for folder in ("blobs", "refs", snapshot):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
    with open(os.path.join(root, "refs", "main"), "w") as f:
        f.write(REVISION)
    for name in ("config.json", "model.safetensors"):
        with open(os.path.join(source, name), "rb") as f:
            data = f.read()
        blob = os.path.join(root, "blobs", hashlib.sha256(data).hexdigest())
        with open(blob, "wb") as f:
            f.write(data)
        os.symlink(os.path.relpath(blob, snapshot), os.path.join(snapshot, name))
    return snapshot


CHILD = r"""
import json, sys
import numpy as np
import texkit as tx
ids, lengths = json.loads(sys.argv[1])
encoder = tx.pretrained.from_pretrained("texkit-tests/tiny-roberta")
outputs, _ = encoder(np.array(ids, np.int32), sequence_length=np.array(lengths, np.int32))
try:
    tx.pretrained.from_pretrained("texkit-tests/not-cached")
    missing = ""
except tx.pretrained.CheckpointError as error:
    missing = str(error)
print(json.dumps({"class": type(encoder).__name__, "outputs": outputs.numpy().tolist(),
                  "missing": missing}))
"""


def test_a_model_loads_by_name_from_the_hub_cache_offline(tmp_path):
    home = str(tmp_path / "hf")
    snapshot = make_cache(home, "texkit-tests/tiny-roberta", os.path.join(FIXTURES, "roberta"))
    assert os.path.islink(os.path.join(snapshot, "model.safetensors"))
    arrays = np.load(os.path.join(FIXTURES, "roberta", "reference.npz"))
    environment = {**os.environ, "HF_HOME": home, "HF_HUB_OFFLINE": "1"}
    environment.pop("HF_HUB_CACHE", None)
    result = subprocess.run(
        [sys.executable, "-c", CHILD,
         json.dumps([arrays["input_ids"].tolist(), arrays["lengths"].tolist()])],
        env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["class"] == "RoBERTaEncoder"
    outputs = np.array(answer["outputs"], np.float32)
    for row, length in enumerate(arrays["lengths"]):
        np.testing.assert_allclose(
            outputs[row, :length], arrays["last_hidden_state"][row, :length], atol=1e-5
        )
    assert "texkit-tests/not-cached" in answer["missing"]
    assert "HF_HUB_OFFLINE is set" in answer["missing"]
