"""MemNetRNNLike and MemNetEmbedder against NumPy (float64), memory masking, variational dropout,
given embedding functions, contract, errors."""

import numpy as np
import pytest

from tests.harness import check_module_contract
from texkit import registry
from texkit.configurable import undocumented_hparams
from texkit.hparams import HParamsError
from texkit.modules import MemNetEmbedder, MemNetRNNLike

RNG = np.random.default_rng(33)
VOCAB, SLOTS, DIM, BATCH = 13, 6, 5, 4
MEMORY = RNG.integers(0, VOCAB, size=(BATCH, SLOTS)).astype(np.int32)
QUERY = RNG.normal(size=(BATCH, DIM)).astype(np.float32)
LENGTHS = np.array([6, 4, 1, 3], np.int32)


def embed_fn(dim=DIM, temporal=DIM, combine="add"):
    return {
        "embedding": {"dim": dim},
        "temporal_embedding": {"dim": temporal},
        "combine_mode": combine,
    }


SMALL = {"n_hops": 3, "memory_size": SLOTS, "relu_dim": 2, "A": embed_fn(), "C": embed_fn()}


def numpy_embed(embedder, ids):
    table = embedder.embedder.embedding.numpy().astype(np.float64)
    temporal = embedder.temporal_embedder.embedding.numpy().astype(np.float64)
    positions = np.broadcast_to(temporal[None, : ids.shape[1]], (*ids.shape, temporal.shape[1]))
    if embedder.hparams.combine_mode == "add":
        return table[ids] + positions
    return np.concatenate([table[ids], positions], axis=-1)


def numpy_memnet(memnet, memory, query, lengths=None, masks=None):
    """The network in float64; ``masks``: the dropout multiplier of each hop, if any."""
    hp = memnet.hparams
    m = numpy_embed(memnet.input_embed_fn, memory)
    c = numpy_embed(memnet.output_embed_fn, memory)
    u = query.astype(np.float64)
    if memnet.query_embed_fn is not None:
        u = numpy_embed(memnet.query_embed_fn, query[:, None])[:, 0]
    for hop in range(hp.n_hops):
        scores = np.einsum("bmd,bd->bm", m, u)
        if lengths is not None:
            scores = np.where(np.arange(m.shape[1])[None] < lengths[:, None], scores, -np.inf)
        p = np.exp(scores - scores.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        if hp.use_H:
            u = u @ memnet.H.numpy()
        u = u + np.einsum("bm,bmd->bd", p, c)
        split = u.shape[1] - hp.relu_dim
        u = np.concatenate([u[:, :split], np.maximum(u[:, split:], 0)], axis=1)
        if masks is not None:
            u = u * masks[hop]
    return u @ memnet.W.kernel.numpy()


@pytest.mark.parametrize("cls", [MemNetRNNLike, MemNetEmbedder])
def test_documented_and_registered(cls):
    assert undocumented_hparams(cls) == ([], [])
    assert registry.resolve(cls.__name__) is cls


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"use_H": False, "relu_dim": 0},
        {"relu_dim": 7, "A": embed_fn(4, 3, "concat"), "C": embed_fn(4, 3, "concat")},
        {"use_B": True, "B": embed_fn(), "n_hops": 2, "relu_dim": 5},
    ],
)
def test_equals_numpy(changes):
    memnet = MemNetRNNLike(VOCAB, hparams={**SMALL, **changes})
    query = RNG.integers(0, VOCAB, size=BATCH) if changes.get("use_B") else QUERY
    if memnet.memory_dim != DIM and memnet.query_embed_fn is None:
        query = RNG.normal(size=(BATCH, memnet.memory_dim)).astype(np.float32)
    got = memnet(MEMORY, query).numpy()
    np.testing.assert_allclose(got, numpy_memnet(memnet, MEMORY, query), atol=1e-5)
    assert got.shape == (BATCH, VOCAB)
    # Soft memory of one-hot rows is the same memory.
    soft = np.eye(VOCAB, dtype=np.float32)[MEMORY]
    if memnet.query_embed_fn is None:
        np.testing.assert_allclose(memnet(soft_memory=soft, query=query).numpy(), got, atol=1e-5)
    else:
        soft_query = np.eye(VOCAB, dtype=np.float32)[query]
        again = memnet(soft_memory=soft, soft_query=soft_query).numpy()
        np.testing.assert_allclose(again, got, atol=1e-5)


def test_memory_sequence_length_leaves_out_the_padded_slots():
    memnet = MemNetRNNLike(VOCAB, hparams=SMALL)
    got = memnet(MEMORY, QUERY, memory_sequence_length=LENGTHS).numpy()
    want = numpy_memnet(memnet, MEMORY, QUERY, lengths=LENGTHS)
    np.testing.assert_allclose(got, want, atol=1e-5)
    other = np.where(np.arange(SLOTS)[None] < LENGTHS[:, None], MEMORY, (MEMORY + 5) % VOCAB)
    again = memnet(other, QUERY, memory_sequence_length=LENGTHS).numpy()
    np.testing.assert_allclose(again, got, atol=1e-5)
    assert not np.allclose(memnet(other, QUERY).numpy(), memnet(MEMORY, QUERY).numpy(), atol=1e-4)


@pytest.mark.parametrize("variational", [True, False])
def test_dropout_masks(variational):
    # W = identity shows u; with relu_dim 0 and no H the only zeros of u are dropped units.
    hparams = {**SMALL, "relu_dim": 0, "use_H": False, "dropout_rate": 0.5}
    memnet = MemNetRNNLike(DIM, hparams={**hparams, "variational": variational})
    memory = np.tile(MEMORY % DIM, (16, 1))
    query = np.tile(QUERY, (16, 1))
    memnet(memory, query)
    memnet.W.kernel.assign(np.eye(DIM, dtype=np.float32))
    np.testing.assert_allclose(
        memnet(memory, query).numpy(), numpy_memnet(memnet, memory, query), atol=1e-5
    )
    u = memnet(memory, query, training=True).numpy()
    kept = (u != 0).astype(np.float64)
    # One mask for every hop: rebuilt from the last hop's zeros, it gives the same u.
    shared = numpy_memnet(memnet, memory, query, masks=[2 * kept] * 3)
    assert np.allclose(u, shared, atol=1e-4) == variational
    assert 0.3 < kept.mean() < 0.7


def test_given_embedding_functions(tmp_path):
    def make(**kw):
        functions = [
            MemNetEmbedder(VOCAB, SLOTS, embed_fn(3, 3), dtype=kw.get("dtype")) for _ in range(2)
        ]
        hparams = {**SMALL, "memory_dim": 3}
        return MemNetRNNLike(VOCAB, *functions, hparams=hparams, **kw)

    memnet = make()
    query = QUERY[:, :3]
    np.testing.assert_allclose(
        memnet(MEMORY, query).numpy(), numpy_memnet(memnet, MEMORY, query), atol=1e-5
    )
    check_module_contract(make, {"memory": MEMORY, "query": query}, tmp_path)

    def plain(memory, soft_memory, training=None):
        return np.zeros((BATCH, SLOTS, DIM), np.float32)

    with pytest.raises(ValueError, match="plain function"):
        MemNetRNNLike(VOCAB, plain, plain, hparams=SMALL).get_config()


def test_contract(tmp_path):
    hparams = {**SMALL, "dropout_rate": 0.1, "variational": True}
    check_module_contract(
        lambda **kw: MemNetRNNLike(VOCAB, hparams=hparams, **kw),
        {"memory": MEMORY, "query": QUERY, "memory_sequence_length": LENGTHS},
        tmp_path,
    )


@pytest.mark.parametrize(
    "hparams, key",
    [
        ({"relu_dim": DIM + 1}, "relu_dim"),
        ({"A": embed_fn(4, 5)}, "A.combine_mode"),
        ({"C": embed_fn(4, 4)}, "A"),
        ({"A": {"combine_mode": "mul"}}, "A.combine_mode"),
        ({"n_hops": 0}, "n_hops"),
        ({"dropout_rate": 1.5}, "dropout_rate"),
        ({"A": {"embedding": {"dim": 0}}}, "A.embedding.dim"),
    ],
)
def test_bad_hparams_name_the_key(hparams, key):
    with pytest.raises(HParamsError) as error:
        MemNetRNNLike(VOCAB, hparams={**SMALL, **hparams})
    assert error.value.path.startswith(key), error.value.path


def test_bad_calls():
    with pytest.raises(ValueError, match="raw_memory_dim"):
        MemNetRNNLike(0, hparams=SMALL)
    memnet = MemNetRNNLike(VOCAB, hparams=SMALL)
    with pytest.raises(ValueError, match="memory_size=6"):
        memnet(MEMORY[:, :4], QUERY)
    with pytest.raises(ValueError, match="query is required"):
        memnet(MEMORY)
    with pytest.raises(ValueError, match="exactly one of memory and soft_memory"):
        memnet(query=QUERY)
    with_b = MemNetRNNLike(VOCAB, hparams={**SMALL, "use_B": True, "B": embed_fn()})
    with pytest.raises(ValueError, match="exactly one of query and soft_query"):
        with_b(MEMORY, np.zeros(BATCH, np.int32), soft_query=np.zeros((BATCH, VOCAB)))
