"""T5's relative position buckets against an independent computation, and the bias table."""

import math

import keras
import numpy as np
import pytest

from texkit.core.relative_position import RelativePositionBias, relative_position_bucket


def t5_bucket(relative, bidirectional, num_buckets, max_distance):
    """The bucket of one key-minus-query distance, written from the T5 paper's description."""
    offset = 0
    if bidirectional:
        num_buckets //= 2
        offset = num_buckets if relative > 0 else 0
        distance = abs(relative)
    else:
        distance = max(-relative, 0)
    exact = num_buckets // 2
    if distance < exact:
        return offset + distance
    log_ratio = math.log(distance / exact) / math.log(max_distance / exact)
    return offset + min(exact + int(log_ratio * (num_buckets - exact)), num_buckets - 1)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (8, 16), (4, 8), (10, 50)])
def test_buckets_equal_the_t5_formula(bidirectional, num_buckets, max_distance):
    relative = np.arange(-400, 400)
    got = relative_position_bucket(relative, bidirectional, num_buckets, max_distance).numpy()
    want = [t5_bucket(int(r), bidirectional, num_buckets, max_distance) for r in relative]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32 and got.min() >= 0 and got.max() < num_buckets
    if not bidirectional:
        assert not got[relative > 0].any()  # keys after the query: bucket 0


def test_bias_looks_up_the_bucket_of_each_pair():
    layer = RelativePositionBias(8, 3, 16, bidirectional=True, name="relative_attention_bias")
    layer.build(None)
    table = np.arange(24, dtype="float32").reshape(8, 3)
    layer.embeddings.assign(table)
    assert [w.path for w in layer.weights] == ["relative_attention_bias/embeddings"]
    queries, keys = np.array([0, 2]), np.arange(5)
    got = layer(queries, keys).numpy()
    assert got.shape == (1, 3, 2, 5) and got.dtype == np.float32
    for i, q in enumerate(queries):
        for j, k in enumerate(keys):
            bucket = t5_bucket(int(k - q), True, 8, 16)
            np.testing.assert_array_equal(got[0, :, i, j], table[bucket])


def test_causal_bias_and_mixed_precision():
    layer = RelativePositionBias(6, 2, 20, bidirectional=False, dtype="mixed_bfloat16")
    got = layer(np.array([3]), np.arange(6))
    assert got.dtype == "float32"
    # Keys after the query share bucket 0, so their biases are equal.
    np.testing.assert_array_equal(got[0, :, 0, 4], got[0, :, 0, 5])


def test_config_round_trip_and_bucket_count():
    layer = RelativePositionBias(
        16, 4, 64, bidirectional=False,
        embeddings_initializer=keras.initializers.RandomNormal(stddev=0.1), name="bias",
    )  # fmt: skip
    clone = RelativePositionBias.from_config(layer.get_config())
    assert (clone.num_buckets, clone.num_heads, clone.max_distance, clone.bidirectional) == (
        16, 4, 64, False,
    )  # fmt: skip
    with pytest.raises(ValueError, match="at least 4 buckets"):
        RelativePositionBias(3, 2, 8)


def test_old_t5_paths_still_work():
    from texkit.modules import decoders, encoders, t5

    with pytest.warns(DeprecationWarning, match="texkit.core.relative_position"):
        got = t5.relative_position_bucket(np.array([-2, 0, 2]), True, 8, 16)
    np.testing.assert_array_equal(got.numpy(), [2, 0, 6])
    # The encoder and decoder moved beside the others and stay importable from texkit.modules.t5.
    assert t5.T5Encoder is encoders.T5Encoder and t5.T5Decoder is decoders.T5Decoder
