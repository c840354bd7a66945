"""A task's ``fit``, ``evaluate`` and ``predict`` (texkit.utils.fit_output.KerasFitDefaults):
progress that suits stdout, and none of Keras' warnings where they say nothing.

pyproject.toml turns Keras' "ran out of data" and "shuffle=True was passed" warnings into errors
for the whole suite, so the calls here fail if one is raised where it should not be.
"""

import warnings

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx

GPT2 = "tests/fixtures/families/gpt2_bpe"  # a tiny GPT-2 with a real byte-level BPE
TEXTS = ["In the beginning God created the heaven and the earth."] * 6


@pytest.fixture(scope="module")
def lm():
    task = tx.tasks.CausalLM.from_pretrained(
        GPT2, hparams={"sequence_length": 16, "jit_compile": False}
    )
    task.compile(optimizer=tf.keras.optimizers.SGD(0.0))
    return task


def test_fit_on_a_dataset_prints_a_line_per_epoch_into_a_log(lm, capsys):
    texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    history = lm.fit(texts, epochs=2, validation_data=texts.filter(lambda text: True))
    assert len(history.history["val_loss"]) == 2
    out = capsys.readouterr().out
    assert "\x08" not in out and "\r" not in out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 500
    assert sum("val_loss" in line for line in lines) == 2  # Keras' verbose=2
    # An explicit choice keeps Keras' meaning: the bar, and its warning for shuffle=True.
    with pytest.warns(UserWarning, match="shuffle=True"):
        lm.fit(texts, epochs=1, verbose=0, shuffle=True)


def test_evaluate_and_predict_read_a_dataset_of_unknown_length_to_its_end(lm, capsys):
    texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    unknown = texts.filter(lambda text: True)
    assert unknown.cardinality() == tf.data.UNKNOWN_CARDINALITY
    known = lm.evaluate(texts, return_dict=True)
    assert lm.evaluate(unknown, return_dict=True) == pytest.approx(known, rel=1e-6)
    ids = tf.data.Dataset.from_tensor_slices(np.full((6, 4), 5, np.int32)).batch(3)
    assert lm.predict(ids.filter(lambda batch: True)).shape[:2] == (6, 4)
    out = capsys.readouterr().out
    assert "\x08" not in out and max(len(line) for line in out.splitlines()) <= 500
    # More steps than the data has: Keras' warning says something, and is kept.
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        lm.evaluate(unknown, steps=5, verbose=0)
    assert np.isfinite(known["loss"])


def test_fit_keeps_the_warning_where_steps_were_given_and_the_data_ran_out(lm):
    texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    unknown = texts.filter(lambda text: True)
    # Training reads each epoch to its end (no steps_per_epoch): silent. The validation was
    # asked for 5 batches of a split of 2: Keras says so, at every epoch.
    with pytest.warns(UserWarning, match="Your input ran out of data") as caught:
        lm.fit(unknown, epochs=2, verbose=0, validation_data=unknown, validation_steps=5)
    assert len([w for w in caught if "ran out of data" in str(w.message)]) == 2


def test_fit_takes_a_callback_list_and_a_callback_reused_after_an_error(lm):
    texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    # A CallbackList (Keras takes one) is given to Keras as it is.
    seen = []
    logger = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    lm.fit(texts, epochs=2, verbose=0, callbacks=tf.keras.callbacks.CallbackList([logger]))
    assert seen == [0, 1]

    # An EndOfDataExpected left mid-epoch by an error restores, in the next fit, nothing of the
    # filters the first fit saw: a filter added in between holds during the second fit.
    quiet = tx.utils.EndOfDataExpected(train=True, validation=True)

    def fail(batch, logs):
        raise RuntimeError("stop")

    failing = tf.keras.callbacks.LambdaCallback(on_train_batch_end=fail)
    with pytest.raises(RuntimeError, match="stop"):
        lm.fit(texts, epochs=1, verbose=0, callbacks=[quiet, failing])
    marker = tf.keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: warnings.warn(
            "a user's warning", UserWarning, stacklevel=2
        )
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="a user's warning")
        with pytest.raises(UserWarning, match="a user's warning"):
            lm.fit(texts, epochs=1, verbose=0, callbacks=[quiet, marker])
