"""Memory of loading a big sharded checkpoint: peak RSS while loading, above the built model.

Makes a ~1 GB GPT-2-shaped folder of random float32 weights in shards of at most ``--shard-mb``
MB (``benchmarks/make_random_checkpoint.py``; in a temporary folder, or ``--out``), then, in a
fresh child process (so that nothing of the parent's counts): builds the ``GPT2Decoder`` the
config describes, collects garbage, reads the process's resident set size (``VmRSS`` in
``/proc/self/status``), resets its high-water mark (writing ``5`` to ``/proc/self/clear_refs``)
and runs ``tx.pretrained.load_checkpoint``. The figure is the high-water mark during loading
(``VmHWM``) minus the resident size after building, set beside the size of the largest shard
and of all the weights. Where the high-water mark cannot be reset, a thread sampling ``VmRSS``
every 2 ms gives the peak instead (and says so).

Resident size counts every page of a memory-mapped file that was read until the map is closed
(``safetensors.safe_open`` maps its file), so a loader reading through maps one shard at a time
peaks at the model plus about a shard; texkit reads with plain reads, part of an entry at a
time. The resident size after loading is printed too: what TensorFlow's allocator keeps of the
variables' buffers that assignment replaced stays after the load, and is not the loader's.

Run: ``python benchmarks/loading_memory.py --shard-mb 100`` (Linux only: it reads ``/proc``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from make_random_checkpoint import write_checkpoint  # noqa: E402

MB = 1e6


def _status(field: str) -> int:
    """A ``/proc/self/status`` field, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


class _Sampler(threading.Thread):
    """The highest ``VmRSS`` seen every 2 ms, where the high-water mark cannot be reset."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak, self.done = _status("VmRSS"), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.002):
            self.peak = max(self.peak, _status("VmRSS"))


def child(folder: str) -> dict:
    """Builds the folder's model, then loads it; returns the figures in bytes and seconds."""
    import texkit as tx
    from texkit.pretrained.folders import (
        config_source,
        hparams_from_config,
        inspect_folder,
        merge_user_hparams,
    )

    family, fmt, raw = inspect_folder(folder)
    config = hparams_from_config(family, raw, config_source(folder, fmt), fmt)
    module = family.module(merge_user_hparams(family, config, None, folder, fmt.assumed))
    module.build((None, None))
    gc.collect()
    built = _status("VmRSS")
    reset = _reset_high_water_mark()
    sampler = None if reset else _Sampler()
    if sampler is not None:
        sampler.start()
    start = time.perf_counter()
    report = tx.pretrained.load_checkpoint(module, folder)
    seconds = time.perf_counter() - start
    if sampler is not None:
        sampler.done.set()
        sampler.join()
    peak = _status("VmHWM") if reset else max(sampler.peak, _status("VmRSS"))
    weights = sum(v.numpy().nbytes for v in module.weights)
    return {
        "built": built,
        "peak": peak,
        "after": _status("VmRSS"),
        "seconds": seconds,
        "loaded": len(report.loaded),
        "model_bytes": weights,
        "peak_from": "VmHWM reset by clear_refs" if reset else "VmRSS sampled every 2 ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shard-mb", type=float, default=100)
    parser.add_argument("--out", help="write (or reuse) the checkpoint here; default: a temp dir")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child)), flush=True)
        return
    temporary = None if args.out else tempfile.mkdtemp(prefix="texkit-loading-")
    folder = args.out or os.path.join(temporary, "gpt2-1gb")
    try:
        if not os.path.exists(os.path.join(folder, "model.safetensors.index.json")):
            write_checkpoint(folder, args.shard_mb)
        shards = [
            os.path.getsize(os.path.join(folder, f))
            for f in os.listdir(folder)
            if f.endswith(".safetensors")
        ]
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        output = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", folder],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        figures = json.loads(output.split("RESULT ", 1)[1])
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    above = figures["peak"] - figures["built"]
    print(
        f"checkpoint: {len(shards)} shards, {sum(shards) / MB:,.0f} MB in all, largest shard "
        f"{max(shards) / MB:,.0f} MB; model variables {figures['model_bytes'] / MB:,.0f} MB"
    )
    print(f"RSS after building the model: {figures['built'] / MB:,.0f} MB")
    print(f"peak RSS while loading:       {figures['peak'] / MB:,.0f} MB ({figures['peak_from']})")
    stays = figures["after"] - figures["built"]
    print(f"RSS after loading:            {figures['after'] / MB:,.0f} MB ({stays / MB:+,.0f} MB)")
    print(
        f"peak minus built:             {above / MB:,.0f} MB = "
        f"{above / max(shards):.2f} x the largest shard, "
        f"{above / figures['model_bytes']:.2f} x the model"
    )
    print(f"load time: {figures['seconds']:.1f} s ({figures['loaded']} entries)")
    print(f"command: python benchmarks/loading_memory.py --shard-mb {args.shard_mb:g}")


if __name__ == "__main__":
    main()
