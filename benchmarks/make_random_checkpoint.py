"""Writes a GPT-2-shaped Hugging Face folder of random weights, sharded, for loading benchmarks.

The folder holds ``config.json`` (``model_type: gpt2``), ``model.safetensors.index.json`` and
shards ``model-0000i-of-0000n.safetensors`` of at most ``--shard-mb`` megabytes each (an entry
larger than that gets a shard of its own, as transformers does; transformers' default shard size
is 50 GB, so a small one is set here). The weights are float32 (``--dtype bfloat16`` or
``float16`` for the other dtypes texkit loads), drawn from a normal distribution of standard
deviation 0.02, one entry in memory at a time plus the shard being written. Only numpy,
ml_dtypes (for bfloat16) and safetensors are used, so the script runs in any environment that
has them.

The default shape (1,024 dims, 16 blocks of 16 heads and a 4,096-unit feed-forward, GPT-2's
50,257-token vocabulary and 1,024 positions) holds 254 million weights: 1.02 GB in float32.

Run: ``python benchmarks/make_random_checkpoint.py --out /tmp/gpt2-1gb --shard-mb 100``
(the folder is a benchmark's input; never commit it).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np
from safetensors.numpy import save_file

INDEX = "model.safetensors.index.json"


def gpt2_config(n_embd: int, n_layer: int, n_head: int, vocab_size: int,
                n_positions: int) -> dict:  # fmt: skip
    """A transformers ``GPT2Config`` dict of these sizes (dropout and the rest as GPT-2's)."""
    return {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "activation_function": "gelu_new",
        "attn_pdrop": 0.1,
        "embd_pdrop": 0.1,
        "resid_pdrop": 0.1,
        "bos_token_id": vocab_size - 1,
        "eos_token_id": vocab_size - 1,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "n_embd": n_embd,
        "n_head": n_head,
        "n_inner": 4 * n_embd,
        "n_layer": n_layer,
        "n_positions": n_positions,
        "tie_word_embeddings": True,
        "vocab_size": vocab_size,
    }


def gpt2_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """The entries of a Hugging Face ``GPT2LMHeadModel`` file and their shapes, in its order."""
    d, inner = config["n_embd"], config["n_inner"]
    shapes = {
        "transformer.wte.weight": (config["vocab_size"], d),
        "transformer.wpe.weight": (config["n_positions"], d),
    }
    for i in range(config["n_layer"]):
        block = f"transformer.h.{i}."
        shapes.update({
            block + "ln_1.weight": (d,),
            block + "ln_1.bias": (d,),
            block + "attn.c_attn.weight": (d, 3 * d),
            block + "attn.c_attn.bias": (3 * d,),
            block + "attn.c_proj.weight": (d, d),
            block + "attn.c_proj.bias": (d,),
            block + "ln_2.weight": (d,),
            block + "ln_2.bias": (d,),
            block + "mlp.c_fc.weight": (d, inner),
            block + "mlp.c_fc.bias": (inner,),
            block + "mlp.c_proj.weight": (inner, d),
            block + "mlp.c_proj.bias": (d,),
        })  # fmt: skip
    shapes["transformer.ln_f.weight"] = (d,)
    shapes["transformer.ln_f.bias"] = (d,)
    return shapes


def _dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def write_checkpoint(out: str, shard_mb: float = 100, dtype: str = "float32", seed: int = 0,
                     **sizes: int) -> dict:  # fmt: skip
    """Writes the folder ``out`` (see the module docstring); returns its index."""
    config = gpt2_config(**{**DEFAULT_SIZES, **sizes})
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    rng = np.random.default_rng(seed)
    limit, kind = shard_mb * 1e6, _dtype(dtype)
    shards: list[list[str]] = []  # the entries of each shard written
    shard: dict[str, np.ndarray] = {}
    size = 0
    for name, shape in gpt2_shapes(config).items():
        nbytes = int(np.prod(shape)) * kind.itemsize
        if shard and size + nbytes > limit:
            shards.append(_write_shard(out, len(shards), shard))
            shard, size = {}, 0
        value = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            value += 1
        shard[name] = value.astype(kind)
        size += nbytes
    shards.append(_write_shard(out, len(shards), shard))
    weight_map = {}
    for i, names in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        os.replace(os.path.join(out, f"shard-{i:05d}.tmp"), os.path.join(out, file))
        weight_map.update(dict.fromkeys(names, file))
    total = sum(int(np.prod(shape)) for shape in gpt2_shapes(config).values()) * kind.itemsize
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(out, INDEX), "w") as f:
        json.dump(index, f, indent=2)
    return index


def _write_shard(out: str, number: int, shard: dict[str, np.ndarray]) -> list[str]:
    """Writes a shard under a temporary name (the count of shards is not known yet)."""
    save_file(shard, os.path.join(out, f"shard-{number:05d}.tmp"))
    return list(shard)


DEFAULT_SIZES = {"n_embd": 1024, "n_layer": 16, "n_head": 16, "vocab_size": 50257,
                 "n_positions": 1024}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the folder to write (created)")
    parser.add_argument("--shard-mb", type=float, default=100, help="largest shard, in MB")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--seed", type=int, default=0)
    for key, value in DEFAULT_SIZES.items():
        parser.add_argument("--" + key.replace("_", "-"), type=int, default=value)
    args = parser.parse_args()
    sizes = {key: getattr(args, key) for key in DEFAULT_SIZES}
    index = write_checkpoint(args.out, args.shard_mb, args.dtype, args.seed, **sizes)
    shards = sorted(set(index["weight_map"].values()))
    print(f"{args.out}: {len(shards)} shards, {index['metadata']['total_size'] / 1e9:.3f} GB")


if __name__ == "__main__":
    main()
