"""A BERT classifier builds the pooler only when it reads it (``clas_strategy: cls_time``).

Every other strategy trains every weight it has (no "Gradients do not exist" from Keras), and a
checkpoint's pooler weights load into it as unused entries, strictly as the rest.
"""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.pretrained.test_bert import TINY as TINY_CONFIG
from tests.pretrained.test_bert import tiny_hf_state, write_hf
from texkit.modules import BERTClassifier, BERTEncoder
from texkit.pretrained import CheckpointError, load_checkpoint

TINY = {k: v for k, v in TINY_CONFIG.items() if k != "model_type"}
IDS = np.array([[2, 5, 7, 3, 0], [2, 9, 3, 0, 0]], np.int32)
LENGTHS = np.array([4, 3], np.int32)
STRATEGIES = [("cls_time", {}), ("mean_time", {}), ("all_time", {"max_seq_length": 5}),
              ("time_wise", {})]  # fmt: skip


def classifier(strategy, extra):
    return BERTClassifier(
        {"encoder": TINY, "num_classes": 3, "clas_strategy": strategy, "dropout": 0.0, **extra}
    )


@pytest.mark.parametrize("strategy,extra", STRATEGIES)
def test_every_weight_of_the_classifier_gets_a_gradient(strategy, extra):
    model = classifier(strategy, extra)
    model(IDS, sequence_length=LENGTHS)
    assert (model.encoder.pooler is not None) == (strategy == "cls_time")
    assert any("pooler" in w.path for w in model.weights) == (strategy == "cls_time")
    with tf.GradientTape() as tape:
        logits, _ = model(IDS, sequence_length=LENGTHS, training=True)
        loss = tf.reduce_sum(logits**2)
    gradients = tape.gradient(loss, model.trainable_variables)
    assert [v.path for v, g in zip(model.trainable_variables, gradients, strict=True)
            if g is None] == []  # fmt: skip
    # Keras' own check, as fit runs it.
    optimizer = keras.optimizers.SGD(0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))


def test_a_checkpoints_pooler_is_unused_by_a_classifier_without_one(tmp_path):
    state = tiny_hf_state()
    folder = write_hf(str(tmp_path / "hf"), state)
    model = classifier("mean_time", {})
    report = load_checkpoint(model, folder)
    assert report.unused == ["pooler.dense.bias", "pooler.dense.weight"]
    assert report.heads == [] and report.missing_heads == []
    assert len(report.loaded) == len(state) - 2
    np.testing.assert_array_equal(
        model.encoder.word_embedder.embedding.numpy(), state["embeddings.word_embeddings.weight"]
    )
    # The pooler is still checked like any entry under the encoder's names: one of another
    # shape under an unknown name is refused, and nothing is loaded.
    state["pooler.dense.extra"] = np.zeros(3, np.float32)
    fresh = classifier("mean_time", {})
    fresh.build((None, None))
    before = [w.numpy().copy() for w in fresh.weights]
    with pytest.raises(CheckpointError, match="pooler.dense.extra"):
        load_checkpoint(fresh, write_hf(str(tmp_path / "bad"), state))
    for weight, value in zip(fresh.weights, before, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value)


def test_cls_time_loads_the_pooler_and_from_pretrained_reports_the_unused_one(tmp_path):
    state = tiny_hf_state()
    folder = write_hf(str(tmp_path / "hf"), state)
    cls = BERTClassifier.from_pretrained(folder, {"clas_strategy": "cls_time"})
    assert cls.load_report.heads == ["pooler"] and cls.load_report.unused == []
    np.testing.assert_array_equal(cls.encoder.pooler.kernel.numpy(), state["pooler.dense.weight"].T)
    mean = BERTClassifier.from_pretrained(folder, {"clas_strategy": "mean_time"})
    assert mean.encoder.pooler is None
    assert mean.load_report.unused == ["pooler.dense.bias", "pooler.dense.weight"]


def test_an_encoder_without_pooler_gives_the_first_hidden_state_and_round_trips():
    encoder = BERTEncoder(TINY, add_pooling_layer=False)
    outputs, pooled = encoder(IDS, sequence_length=LENGTHS)
    np.testing.assert_array_equal(pooled.numpy(), outputs.numpy()[:, 0])
    again = BERTEncoder.from_config(encoder.get_config())
    assert again.pooler is None and BERTEncoder(TINY).get_config().get("add_pooling_layer", True)


def test_add_pooling_layer_true_keeps_the_pooler_of_earlier_runs(tmp_path):
    # texkit 0.1.0 built the pooler whatever the strategy: its runs' checkpoints (model and
    # optimizer state, listed by position) restore into a classifier that keeps it.
    older = classifier("mean_time", {"add_pooling_layer": True})
    optimizer = keras.optimizers.Adam(1e-3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(older(IDS, sequence_length=LENGTHS, training=True)[0] ** 2)
    variables = older.trainable_variables
    with pytest.warns(UserWarning, match="Gradients do not exist"):  # the pooler: kept, unread
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
    path = tf.train.Checkpoint(model=older, optimizer=optimizer).write(str(tmp_path / "ckpt"))
    assert any("pooler" in w.path for w in older.weights)

    again = classifier("mean_time", {"add_pooling_layer": True})
    again(IDS, sequence_length=LENGTHS)
    again_optimizer = keras.optimizers.Adam(1e-3)
    again_optimizer.build(again.trainable_variables)
    tf.train.Checkpoint(model=again, optimizer=again_optimizer).read(path).assert_consumed()
    for weight, value in zip(again.weights, older.weights, strict=True):
        np.testing.assert_array_equal(weight.numpy(), value.numpy())
    # Its outputs are the mean strategy's: the pooler is kept, not read.
    np.testing.assert_allclose(
        again(IDS, sequence_length=LENGTHS)[0].numpy(),
        older(IDS, sequence_length=LENGTHS)[0].numpy(),
        rtol=1e-6,
    )
    with pytest.raises(Exception, match="add_pooling_layer"):
        classifier("mean_time", {"add_pooling_layer": "yes"})
