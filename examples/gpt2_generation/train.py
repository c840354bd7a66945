"""Generates text with a pretrained GPT-2: greedy decoding, nucleus sampling and beam search.

(The file is ``train.py`` because every example runs as ``python -m examples.<name>.train``; this
one trains nothing.)

``pretrained`` is a GPT-2 folder holding the model and its tokenizer: a Hugging Face download
(``config.json``, ``model.safetensors``, ``vocab.json``, ``merges.txt``), OpenAI's release folder
(``hparams.json``, ``model.ckpt.*``, ``encoder.json``, ``vocab.bpe``), or a Hugging Face hub name
such as ``openai-community/gpt2`` (with ``pip install "texkit[hub]"``). The model comes from
``tx.modules.GPT2Decoder.from_pretrained``, the tokenizer from
``tx.data.GPT2BPETokenizer.from_pretrained``. The default, ``tests/fixtures/families/gpt2_bpe``,
is a tiny GPT-2 with random weights, for a quick run: it writes gibberish, but the gibberish of
Hugging Face ``transformers`` (the folder's ``reference.json``, which the test compares).

The prompts are tokenized in the TensorFlow graph (byte-level BPE in TensorFlow ops) into one
right-padded batch and their lengths. Each search runs in ``tf.function(jit_compile=True)``:

* greedy and sampling: ``lm(decoding_strategy=..., context=prompts,
  context_sequence_length=lengths, end_token=<|endoftext|>, max_decoding_length=...)`` forces
  each prompt, then continues it. ``sample_id`` starts at the prompts' second token, so a prompt
  of ``n`` tokens continues at ``sample_id[n - 1]``; ``max_decoding_length`` is the longest
  prompt's ``n - 1`` plus ``max_new_tokens`` (shorter prompts decode more steps, which are
  dropped). Sampling keeps the fewest tokens holding ``top_p`` of the probability (after the
  softmax temperature) and draws with a stateless seed: the same seed, the same text.
* beam search: ``lm.beam_search(beam_width, length_penalty, ...)``, the best hypothesis. Its step
  count is one for the batch, and more steps can change which hypothesis wins, so the prompts go
  in batches of one length (one compilation per length).

A continuation ends at ``<|endoftext|>`` or after ``max_new_tokens``; ``detokenize`` turns it
back into text (without the end token), printed as a Python string. Greedy decoding gives what
``transformers``' ``generate(do_sample=False)`` gives, and beam search with ``length_penalty``
0.0 what ``generate(num_beams=beam_width, length_penalty=0.0, early_stopping=True)`` gives,
each prompt on its own.

From the repository root:

    python -m examples.gpt2_generation.train --config examples/gpt2_generation/config.yaml
    python -m examples.gpt2_generation.train --pretrained openai-community/gpt2 \\
        --max-new-tokens 40 --prompt "The meaning of life is" --prompt "Once upon a time"
"""

from __future__ import annotations

import os
import time

import numpy as np
import tensorflow as tf

import texkit as tx
from examples.common.command_line import example_parser

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "config.yaml")
TINY = os.path.join(HERE, os.pardir, os.pardir, "tests", "fixtures", "families", "gpt2_bpe")
DEFAULTS = {
    "pretrained": "tests/fixtures/families/gpt2_bpe",  # TINY, from the repository root
    "prompts": ["In the beginning", "And God said", "The LORD is my"],
    "max_new_tokens": 12,
    "top_p": 0.9,
    "temperature": 1.0,
    "seed": 0,
    "beam_width": 4,
    "length_penalty": 0.0,
}


def is_tiny(folder: str) -> bool:
    """Whether ``folder`` is the tiny random GPT-2 of the tests."""
    return os.path.isdir(folder) and os.path.isdir(TINY) and os.path.samefile(folder, TINY)


def new_tokens(sample_id, prompt_length, length, max_new_tokens):
    """``[batch, max_new_tokens]`` ids after each prompt and how many of them were decoded (up
    to the end token, included), from ``sample_id`` that starts at the prompts' second token."""
    forced = prompt_length - 1
    at = forced[:, None] + tf.range(max_new_tokens)[None, :]
    ids = tf.gather(sample_id, tf.minimum(at, tf.shape(sample_id)[1] - 1), batch_dims=1)
    return ids, tf.clip_by_value(length - forced, 0, max_new_tokens)


class Generator:
    """A GPT-2 and its tokenizer; greedy, sampling and beam search compiled by XLA."""

    def __init__(self, settings: tx.HParams):
        self.settings = settings
        self.folder = tx.pretrained.resolve_checkpoint(settings.pretrained)
        self.lm = tx.modules.GPT2Decoder.from_pretrained(self.folder)
        self.tokenizer = tx.data.GPT2BPETokenizer.from_pretrained(self.folder)
        self.end = self.tokenizer.eos_id  # <|endoftext|>

    def encode(self, prompts: list[str]) -> tuple[tf.Tensor, np.ndarray]:
        ids = self.tokenizer.tokenize(tf.constant(prompts))
        lengths = ids.row_lengths().numpy().astype(np.int32)
        if not lengths.all():
            raise ValueError("every prompt needs at least one token")
        return ids.to_tensor(self.end), lengths

    @tf.function(jit_compile=True)
    def greedy(self, prompts, lengths):
        return self._decode(prompts, lengths, decoding_strategy="infer_greedy")

    @tf.function(jit_compile=True)
    def sample(self, prompts, lengths, seed):
        hp = self.settings
        return self._decode(prompts, lengths, decoding_strategy="infer_sample", seed=seed,
                            top_p=hp.top_p, softmax_temperature=hp.temperature)  # fmt: skip

    def _decode(self, prompts, lengths, **how):
        new = self.settings.max_new_tokens
        outputs, _, decoded = self.lm(
            context=prompts, context_sequence_length=lengths, end_token=self.end,
            max_decoding_length=prompts.shape[1] - 1 + new, **how,
        )  # fmt: skip
        return new_tokens(outputs.sample_id, lengths, decoded, new)

    @tf.function(jit_compile=True)
    def beam_search(self, prompts):
        """Prompts of one length: [batch, time]."""
        hp, time = self.settings, prompts.shape[1]
        search = self.lm.beam_search(
            hp.beam_width, hp.length_penalty, end_token=self.end, context=prompts,
            max_decoding_length=time - 1 + hp.max_new_tokens,
        )  # fmt: skip
        return search.ids[:, 0, time - 1 :], tf.maximum(search.lengths[:, 0] - (time - 1), 0)

    def beam_search_by_length(self, prompts, lengths):
        ids = np.zeros([len(lengths), self.settings.max_new_tokens], np.int32)
        counts = np.zeros([len(lengths)], np.int32)
        for length in np.unique(lengths):
            rows = np.flatnonzero(lengths == length)
            found, count = self.beam_search(tf.gather(prompts, rows)[:, :length])
            ids[rows], counts[rows] = found.numpy(), count.numpy()
        return ids, counts

    def texts(self, ids, counts) -> list[dict]:
        """Each row's ids (up to the end token, included) and text (without it)."""
        ragged = tf.RaggedTensor.from_tensor(ids, lengths=counts)
        texts = self.tokenizer.detokenize(ragged).numpy()
        return [{"ids": row.tolist(), "text": text.decode("utf-8", "replace")}
                for row, text in zip(ragged.numpy(), texts, strict=True)]  # fmt: skip


def run(settings: tx.HParams) -> dict:
    start = time.time()
    generator = Generator(settings)
    lm, folder = generator.lm, generator.folder
    print(
        f"GPT-2 from {settings.pretrained}: {lm.hparams.decoder.num_blocks} blocks of "
        f"{lm.hparams.dim} units, {lm.vocab_size:,} tokens, {lm.count_params():,} parameters"
        + (" (RANDOM weights: gibberish)" if is_tiny(folder) else "")
    )
    prompts, lengths = generator.encode(list(settings.prompts))
    seed = tf.constant([settings.seed, 0])
    results = {
        "greedy": generator.texts(*generator.greedy(prompts, lengths)),
        "sample": generator.texts(*generator.sample(prompts, lengths, seed)),
        "beam": generator.texts(*generator.beam_search_by_length(prompts, lengths)),
    }
    labels = {"greedy": "greedy", "sample": f"top-p {settings.top_p}",
              "beam": f"{settings.beam_width} beams"}  # fmt: skip
    for row, prompt in enumerate(settings.prompts):
        print(f"\n{prompt!r} ({lengths[row]} tokens) + up to {settings.max_new_tokens}:")
        for name, label in labels.items():
            print(f"  {label:<10} {results[name][row]['text']!r}")
    seconds = time.time() - start
    print(f"\n({seconds:.1f} s, loading and XLA compilation included)")
    prompt_ids = [row[:n].tolist() for row, n in zip(prompts.numpy(), lengths, strict=True)]
    return {**results, "prompt_ids": prompt_ids, "generator": generator, "seconds": seconds}


def main(argv: list[str] | None = None) -> dict:
    """``--config FILE [--pretrained FOLDER] [--prompt TEXT ...] [--max-new-tokens N] ...``;
    returns :func:`run`'s result: each search's ``{"ids", "text"}`` per prompt."""
    parser = example_parser(__doc__, CONFIG, overrides=None)
    parser.add_argument("--pretrained", help="a GPT-2 folder with its tokenizer, or a hub name")
    parser.add_argument("--prompt", action="append", dest="prompts", help="repeat for several")
    parser.add_argument("--max-new-tokens", type=int)
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--temperature", type=float, help="sampling's softmax temperature")
    parser.add_argument("--beam-width", type=int)
    parser.add_argument("--seed", type=int, help="sampling's seed")
    args = vars(parser.parse_args(argv))
    del args["verbose"]  # read by texkit when it was imported
    user = tx.HParams.from_yaml(args.pop("config"), None).todict()
    user.update({key: value for key, value in args.items() if value is not None})
    return run(tx.HParams(user, DEFAULTS))


if __name__ == "__main__":
    main()
