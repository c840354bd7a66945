"""GeneratingTask: what the tasks that generate text share (``generate``, its settings).

See :class:`~texkit.tasks.CausalLM` and :class:`~texkit.tasks.Seq2SeqLM`; the generation itself
is :mod:`texkit.tasks.generation`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from texkit.hparams import HParams
from texkit.tasks.generation import Generator, as_prompts
from texkit.tasks.generation_settings import settings_from
from texkit.tasks.task import Task

__all__ = ["GENERATION_DOC", "GeneratingTask", "generation_hparams"]


def generation_hparams() -> dict:
    """The ``generation`` hparams of the generating tasks (defaults of ``generate``)."""
    return {
        "max_new_tokens": 32,
        "strategy": "greedy",
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
        "beam_width": 4,
        "length_penalty": 1.0,
        "early_stopping": False,
        "end_token_ids": None,
        "stop_strings": None,
        "seed": None,
    }


GENERATION_DOC = {
    "generation": "The defaults of generate() (from_pretrained reads the folder's "
    "generation_config.json); each is an argument of generate.",
    "generation.max_new_tokens": "Most tokens generated after each prompt.",
    "generation.strategy": '"greedy", "sample" or "beam".',
    "generation.temperature": "Sampling: the logits are divided by it.",
    "generation.top_k": "Sampling: only the k most likely tokens (0: all), as transformers' "
    "default of 50.",
    "generation.top_p": "Sampling: only the most likely tokens whose mass reaches top_p.",
    "generation.beam_width": "Beam search: hypotheses kept.",
    "generation.length_penalty": "Beam search: scores are sum log p / new_tokens ** "
    "length_penalty (transformers' rule).",
    "generation.early_stopping": "Beam search: False, True or 'never' (transformers' rules).",
    "generation.end_token_ids": "The ids that end a text (the checkpoint's eos_token_id, one "
    "or several); null: none.",
    "generation.stop_strings": "Strings that end a text where they begin (cut).",
    "generation.seed": "Sampling: the seed (null: a new one per call).",
}


class GeneratingTask(Task):
    """A task with a decoder that generates text (a base class: see the module).

    Subclasses supply, for :class:`~texkit.tasks.generation.Generator`: ``max_length``,
    ``steps_for``, ``first_new_step``, ``_memory``, ``_inference`` and ``_prompt_ids``.
    """

    def __init__(self, hparams: Mapping | HParams | None = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        self._generator = Generator(self)

    @property
    def generation_xla(self) -> bool:
        """Whether generation compiles with XLA (the ``jit_compile`` hparam)."""
        return bool(self.hparams.jit_compile)

    @property
    def pad_id(self) -> int:
        for value in (getattr(self.tokenizer, "pad_id", None), *self._end_ids(), 0):
            if value is not None:
                return int(value)
        return 0

    def prompt_token_ids(self, texts: Any) -> Any:
        """``[batch, (tokens)]`` int32 ``tf.RaggedTensor``: the ids ``generate`` feeds for each
        text of ``texts`` (a ``[batch]`` string tensor), the tokenizer's template around them; in
        the graph."""
        return self._prompt_ids_graph(texts)

    def _end_ids(self) -> list[int]:
        return list(self.hparams.generation.end_token_ids or [])

    # --- generate ------------------------------------------------------------------------------

    def generate(
        self,
        texts: str | list[str],
        max_new_tokens: int | None = None,
        strategy: str | None = None,
        *,
        top_k: int | None = None,
        top_p: float | None = None,
        temperature: float | None = None,
        beam_width: int | None = None,
        length_penalty: float | None = None,
        early_stopping: bool | str | None = None,
        stop_strings: str | list[str] | None = None,
        stop_token_ids: int | list[int] | None = None,
        seed: int | None = None,
        stream: bool = False,
        truncate_prompts: bool = False,
    ) -> str | list[str] | Iterator[Any]:
        """Continues each prompt; the prompt is not repeated.

        Args:
            texts: a prompt (gives a string) or a list of prompts (gives a list), each
                tokenized as the checkpoint's tokenizer does (its start token, if it adds
                one). Prompts of different lengths give what each gives alone (greedy and
                beam search; sampling draws from the same distributions).
            max_new_tokens: most tokens generated per prompt.
            strategy: ``"greedy"``, ``"sample"`` or ``"beam"``.
            top_k, top_p, temperature: sampling's (applied in that order: temperature, top-k,
                top-p, as transformers does).
            beam_width, length_penalty, early_stopping: beam search's (transformers' rules:
                :mod:`texkit.tasks.generation_loops`).
            stop_strings: texts end where one of these begins (it is cut).
            stop_token_ids: ids that end a text besides the checkpoint's end tokens.
            seed: sampling's seed (the same seed, prompts and settings give the same texts).
            truncate_prompts: a prompt too long for the model's positions keeps its last tokens
                (default: refused, naming the lengths).
            stream: yield text pieces as tokens arrive instead (greedy and sampling): a string
                per step for one prompt, a list of strings (one per prompt) for a list; the
                pieces join to what ``stream=False`` returns.

        Every unset argument takes the ``generation`` hparams' value. The end token (any of
        ``end_token_ids``) and stop strings end a text and are cut.

        Raises:
            ValueError: an empty list, a prompt longer than the model's positions allow, a
                non-positive ``max_new_tokens``, an unknown strategy or setting, naming it.
        """
        prompts, single = as_prompts(texts)
        arguments = {
            "max_new_tokens": max_new_tokens, "strategy": strategy, "top_k": top_k,
            "top_p": top_p, "temperature": temperature, "beam_width": beam_width,
            "length_penalty": length_penalty, "early_stopping": early_stopping,
            "stop_strings": stop_strings, "stop_token_ids": stop_token_ids, "seed": seed,
        }  # fmt: skip
        vocab = self._vocab_size()
        settings = settings_from(self.hparams.generation.todict(), arguments, vocab)
        ids = self._checked_prompts(self._prompt_ids(prompts), settings, truncate_prompts)
        if stream:
            return self._generator.stream(ids, settings, single)
        out = self._generator.generate(ids, settings)
        return out[0] if single else out

    def generate_ids(self, texts: str | list[str], **settings: Any) -> list[list[int]]:
        """The new token ids of each prompt (a list of lists, one per prompt, also for one
        string), the end token included when one was generated; stop strings do not apply.
        ``settings``: :meth:`generate`'s (but ``stream``)."""
        prompts, _ = as_prompts(texts)
        truncate = settings.pop("truncate_prompts", False)
        unknown = set(settings) - set(self._setting_names())
        if unknown:
            raise ValueError(f"generate_ids: unknown argument(s) {sorted(unknown)}")
        checked = settings_from(self.hparams.generation.todict(), settings, self._vocab_size())
        ids = self._checked_prompts(self._prompt_ids(prompts), checked, truncate)
        return self._generator.generate_ids(ids, checked)

    @staticmethod
    def _setting_names() -> tuple[str, ...]:
        return (
            "max_new_tokens", "strategy", "top_k", "top_p", "temperature", "beam_width",
            "length_penalty", "early_stopping", "stop_strings", "stop_token_ids", "seed",
        )  # fmt: skip

    def _checked_prompts(self, ids: list, settings: Any, truncate: bool) -> list:
        """The prompts' ids, the too long ones cut to their last tokens when ``truncate``."""
        limit = self.max_length
        if truncate and limit is not None:
            room = limit - settings.max_new_tokens
            if room < 1:
                raise ValueError(
                    f"generate: max_new_tokens={settings.max_new_tokens} leaves no room for a "
                    f"prompt in the model's {limit} positions"
                )
            ids = [prompt[-room:] for prompt in ids]
        return ids

    def export_serving(
        self, path: str | os.PathLike, max_prompt_tokens: int | None = None, batch_size: int = 8,
        **settings: Any,
    ) -> str:  # fmt: skip
        """Writes a SavedModel that serves text in, text out: ``serve(texts)`` tokenizes,
        generates and detokenizes in the graph (:func:`texkit.tasks.serving.export_generation`;
        ``settings``: :meth:`generate`'s)."""
        from texkit.tasks.serving import export_generation

        return export_generation(self, path, max_prompt_tokens, batch_size, **settings)

    def generation_server(
        self, max_prompt_tokens: int | None = None, batch_size: int = 8, **settings: Any
    ) -> Any:
        """The ``tf.Module`` whose ``serve(texts)`` generates in the graph
        (:func:`texkit.tasks.serving.generation_server`), as ``texkit export`` writes it."""
        from texkit.tasks.serving import generation_server

        checked = settings_from(self.hparams.generation.todict(), settings, self._vocab_size())
        return generation_server(self, max_prompt_tokens, checked, batch_size)

    def _vocab_size(self) -> int | None:
        return self.decoder._logits_size()
