import math

import numpy as np
import pytest
import tensorflow as tf

import texkit as tx
from tests.harness import check_module_contract
from texkit.configurable import undocumented_hparams
from texkit.modules import PositionEmbedder, SinusoidsPositionEmbedder, WordEmbedder

RNG = np.random.default_rng(1234)
IDS = RNG.integers(0, 20, size=(4, 6)).astype(np.int32)
LENGTHS = np.array([6, 3, 1, 4], np.int32)


def reference_sinusoids(positions, dim, base=10000.0):
    """Vaswani et al. (2017), written out position by position."""
    out = np.zeros(np.shape(positions) + (dim,))
    for index, pos in np.ndenumerate(np.asarray(positions)):
        for k in range(dim):
            angle = pos / base ** (2 * (k // 2) / dim)
            out[index + (k,)] = math.sin(angle) if k % 2 == 0 else math.cos(angle)
    return out


@pytest.mark.parametrize("cls", [WordEmbedder, PositionEmbedder, SinusoidsPositionEmbedder])
def test_every_hparam_is_documented(cls):
    missing, stale = undocumented_hparams(cls)
    assert not missing and not stale
    assert "dim = " in cls.__doc__


# -- WordEmbedder ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dropout",
    [{}, *({"dropout_rate": 0.3, "dropout_strategy": s} for s in ("element", "item", "item_type"))],
)
def test_word_embedder_contract(tmp_path, dropout):
    outputs = check_module_contract(
        lambda **kw: WordEmbedder(vocab_size=20, hparams={"dim": 8, **dropout}, **kw),
        {"ids": IDS},
        tmp_path,
        sequence_inputs={"ids": 1},
        lengths=LENGTHS,
        output_time_axes=1,
    )
    assert outputs.shape == (4, 6, 8)


def test_word_embedder_soft_ids_contract(tmp_path):
    soft = RNG.random((3, 5, 20)).astype(np.float32)
    check_module_contract(
        lambda **kw: WordEmbedder(vocab_size=20, hparams={"dim": 8}, **kw),
        {"soft_ids": soft / soft.sum(-1, keepdims=True)},
        tmp_path,
    )


def test_word_embedder_lookup_equals_init_value_rows():
    table = RNG.normal(size=(20, 5)).astype(np.float32)
    embedder = WordEmbedder(init_value=table)
    assert embedder.vocab_size == 20 and embedder.dim == 5 and embedder.hparams.dim == 5
    np.testing.assert_array_equal(embedder(IDS).numpy(), table[IDS])
    soft = RNG.random((4, 6, 20)).astype(np.float32)
    np.testing.assert_allclose(embedder(soft_ids=soft).numpy(), soft @ table, rtol=1e-5, atol=1e-5)
    one_hot = np.eye(20, dtype=np.float32)[IDS]
    np.testing.assert_allclose(embedder(soft_ids=one_hot).numpy(), table[IDS], atol=1e-6)


def test_word_embedder_initializer_from_hparams():
    constant = WordEmbedder(
        vocab_size=6,
        hparams={"dim": 3, "initializer": {"type": "Constant", "kwargs": {"value": 0.5}}},
    )
    constant.build()
    np.testing.assert_array_equal(constant.embedding.numpy(), np.full((6, 3), 0.5, np.float32))
    uniform = WordEmbedder(vocab_size=500, hparams={"dim": 20})
    uniform.build()
    values = uniform.embedding.numpy()
    assert values.min() >= -0.1 and values.max() <= 0.1 and values.std() > 0.04


def test_word_embedder_not_trainable():
    embedder = WordEmbedder(vocab_size=5, hparams={"dim": 2, "trainable": False})
    embedder(np.array([1]))
    assert embedder.trainable_weights == [] and len(embedder.non_trainable_weights) == 1


def _no_dropout_and_dropped(strategy, rate=0.5):
    table = RNG.normal(size=(20, 16)).astype(np.float32) + 3.0  # no zeros by chance
    embedder = WordEmbedder(
        init_value=table, hparams={"dropout_rate": rate, "dropout_strategy": strategy}
    )
    plain = embedder(IDS, training=False).numpy()
    dropped = embedder(IDS, training=True).numpy()
    return plain, dropped


def test_dropout_element_zeroes_single_numbers_and_rescales():
    plain, dropped = _no_dropout_and_dropped("element")
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2.0, rtol=1e-6)
    per_vector = kept.mean(-1)
    assert ((per_vector > 0) & (per_vector < 1)).any(), "element dropout should split vectors"
    assert 0.3 < kept.mean() < 0.7


def test_dropout_item_drops_whole_vectors():
    plain, dropped = _no_dropout_and_dropped("item")
    kept = dropped != 0
    assert np.all(kept.all(-1) | (~kept).all(-1)), "a vector is kept or dropped whole"
    np.testing.assert_allclose(dropped[kept], plain[kept] * 2.0, rtol=1e-6)
    assert 0 < kept.all(-1).mean() < 1


def test_dropout_item_type_drops_every_occurrence_of_an_id():
    plain, dropped = _no_dropout_and_dropped("item_type")
    kept_vector = (dropped != 0).all(-1)
    assert np.all(kept_vector | (dropped == 0).all(-1))
    for token in np.unique(IDS):
        decisions = kept_vector[IDS == token]
        assert decisions.all() or not decisions.any(), f"id {token} dropped only in places"
    np.testing.assert_allclose(dropped[kept_vector], plain[kept_vector] * 2.0, rtol=1e-6)


@pytest.mark.parametrize("strategy", ["element", "item", "item_type"])
def test_dropout_off_in_inference(strategy):
    table = RNG.normal(size=(20, 16)).astype(np.float32)
    embedder = WordEmbedder(
        init_value=table, hparams={"dropout_rate": 0.5, "dropout_strategy": strategy}
    )
    np.testing.assert_array_equal(embedder(IDS).numpy(), table[IDS])
    np.testing.assert_array_equal(embedder(IDS, training=False).numpy(), table[IDS])


def test_word_embedder_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size"):
        WordEmbedder()
    with pytest.raises(ValueError, match="vocab_size=7 disagrees"):
        WordEmbedder(vocab_size=7, init_value=np.zeros((5, 2)))
    with pytest.raises(tx.HParamsError, match="dim") as error:
        WordEmbedder(init_value=np.zeros((5, 2)), hparams={"dim": 3})
    assert error.value.path == "dim"
    with pytest.raises(tx.HParamsError) as error:
        WordEmbedder(vocab_size=5, hparams={"dropout_strategy": "row"})
    assert error.value.path == "dropout_strategy"
    embedder = WordEmbedder(vocab_size=5, hparams={"dim": 2})
    with pytest.raises(ValueError, match="exactly one"):
        embedder()
    with pytest.raises(ValueError, match="vocab_size=5"):
        embedder(soft_ids=np.zeros((1, 6), np.float32))
    with pytest.raises(TypeError, match="integers"):
        embedder(np.zeros((1, 2), np.float32))


def test_default_names_are_numbered_and_explicit_names_kept():
    first, second = WordEmbedder(vocab_size=3), WordEmbedder(vocab_size=3)
    assert first.name != second.name
    assert first.hparams.name == first.name and second.hparams.name == second.name
    named = WordEmbedder(vocab_size=3, hparams={"name": "source_embedder"})
    assert named.name == "source_embedder"


# -- PositionEmbedder ----------------------------------------------------------------------


def test_position_embedder_contract(tmp_path):
    positions = np.tile(np.arange(6, dtype=np.int32), (4, 1))
    check_module_contract(
        lambda **kw: PositionEmbedder(position_size=10, hparams={"dim": 8}, **kw),
        {"positions": positions, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"positions": 1},
        output_time_axes=1,
    )


def test_position_embedder_rows_and_padding_zeros():
    embedder = PositionEmbedder(position_size=12, hparams={"dim": 4})
    outputs = embedder(sequence_length=LENGTHS, max_time=7).numpy()
    table = embedder.embedding.numpy()
    assert outputs.shape == (4, 7, 4)
    for b, length in enumerate(LENGTHS):
        np.testing.assert_array_equal(outputs[b, :length], table[:length])
        np.testing.assert_array_equal(outputs[b, length:], 0)
    dynamic = embedder(sequence_length=LENGTHS).numpy()
    np.testing.assert_array_equal(dynamic, outputs[:, : LENGTHS.max()])
    explicit = embedder(np.array([[5, 0, 11]])).numpy()
    np.testing.assert_array_equal(explicit[0], table[[5, 0, 11]])


def test_position_embedder_static_shape_under_xla():
    embedder = PositionEmbedder(position_size=12, hparams={"dim": 4})
    fn = tf.function(
        lambda lengths: embedder(sequence_length=lengths, max_time=9), jit_compile=True
    )
    concrete = fn.get_concrete_function(tf.TensorSpec([4], tf.int32))
    assert concrete.structured_outputs.shape.as_list() == [4, 9, 4]
    np.testing.assert_allclose(fn(LENGTHS).numpy(), embedder(sequence_length=LENGTHS, max_time=9))


def test_position_embedder_needs_positions_or_lengths():
    with pytest.raises(ValueError, match="sequence_length"):
        PositionEmbedder(position_size=4)()


# -- SinusoidsPositionEmbedder ---------------------------------------------------------------


@pytest.mark.parametrize("position_size", [None, 64])
def test_sinusoids_contract(tmp_path, position_size):
    positions = np.tile(np.arange(6, dtype=np.int32), (4, 1))
    check_module_contract(
        lambda **kw: SinusoidsPositionEmbedder(position_size, hparams={"dim": 10}, **kw),
        {"positions": positions, "sequence_length": LENGTHS},
        tmp_path,
        sequence_inputs={"positions": 1},
        output_time_axes=1,
    )


@pytest.mark.parametrize("dim", [8, 7])
def test_sinusoids_equal_the_formula(dim):
    positions = np.array([[0, 1, 2, 3], [10, 50, 99, 127]])
    table_embedder = SinusoidsPositionEmbedder(128, hparams={"dim": dim})
    np.testing.assert_allclose(
        table_embedder(positions).numpy(), reference_sinusoids(positions, dim), atol=1e-6
    )
    # Computed on the fly in float32: the angle pos * 10000^(-2i/dim) carries a relative
    # rounding error of about 1e-7, i.e. ~1e-4 absolute at position 1000.
    far = np.array([[0, 7, 255, 999, 4096]])
    on_the_fly = SinusoidsPositionEmbedder(hparams={"dim": dim})
    got = on_the_fly(far).numpy()
    want = reference_sinusoids(far, dim)
    np.testing.assert_allclose(got[:, :4], want[:, :4], atol=2e-4)
    np.testing.assert_allclose(got[:, 4], want[:, 4], atol=1e-3)


def test_sinusoids_lengths_and_custom_timescale():
    embedder = SinusoidsPositionEmbedder(hparams={"dim": 6, "max_timescale": 100.0})
    outputs = embedder(sequence_length=np.array([2, 4]), max_time=5).numpy()
    want = reference_sinusoids(np.arange(5), 6, base=100.0)
    np.testing.assert_allclose(outputs[1, :4], want[:4], atol=1e-6)
    np.testing.assert_array_equal(outputs[0, 2:], 0)
    np.testing.assert_array_equal(outputs[1, 4:], 0)
    with pytest.raises(tx.HParamsError) as error:
        SinusoidsPositionEmbedder(hparams={"max_timescale": 1.0})
    assert error.value.path == "max_timescale"


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"])
def test_ids_of_every_integer_dtype_look_up_the_same_rows(dtype):
    table = RNG.normal(size=(20, 3)).astype(np.float32)
    embedder = WordEmbedder(init_value=table)
    np.testing.assert_array_equal(embedder(IDS.astype(dtype)).numpy(), table[IDS])


def test_negative_ids_are_not_wrapped_around():
    embedder = WordEmbedder(vocab_size=5, hparams={"dim": 2})
    with pytest.raises(tf.errors.InvalidArgumentError):
        embedder(np.array([[-1]], np.int32))


def test_init_value_with_the_full_default_hparams_takes_dim_from_the_matrix():
    table = RNG.normal(size=(7, 3)).astype(np.float32)
    embedder = WordEmbedder(init_value=table, hparams=WordEmbedder.make_hparams(None))
    assert embedder.dim == 3
    np.testing.assert_array_equal(embedder(np.array([[6, 0]])).numpy()[0], table[[6, 0]])


def test_position_arguments_are_checked():
    embedder = PositionEmbedder(position_size=8, hparams={"dim": 4})
    with pytest.raises(ValueError, match="max_time=10 exceeds position_size=8"):
        embedder(sequence_length=np.array([10]), max_time=10)
    with pytest.raises(ValueError, match=r"positions must be \[batch, time\]"):
        embedder(np.arange(4, dtype=np.int32), sequence_length=LENGTHS)
    sinusoids = SinusoidsPositionEmbedder(np.int64(16), hparams={"dim": 4})
    with pytest.raises(ValueError, match="exceeds position_size=16"):
        sinusoids(sequence_length=np.array([3]), max_time=17)


def test_an_empty_batch_gives_an_empty_result():
    embedder = PositionEmbedder(position_size=8, hparams={"dim": 4})
    assert embedder(sequence_length=np.zeros((0,), np.int32)).shape == (0, 0, 4)
