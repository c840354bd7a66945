"""Task models: text in, text out.

A task owns its preprocessor (the family's in-graph tokenizer) and its module, and offers what a
user does with a pretrained model: generate text (:class:`CausalLM`, :class:`Seq2SeqLM`),
classify (:class:`TextClassifier`), fine-tune (fully or with LoRA), quantize for inference and
export back to Hugging Face's format.
"""

from texkit.tasks.causal_lm import CausalLM
from texkit.tasks.generation_settings import GenerationSettings
from texkit.tasks.lora import (
    enable_lora,
    lora_enabled,
    lora_from_hparams,
    lora_parameter_count,
    merge_lora,
)
from texkit.tasks.lora_files import load_adapters, save_adapters
from texkit.tasks.quantization import QUANTIZATION_MODES, quantization_mode, quantize
from texkit.tasks.seq2seq_lm import Seq2SeqLM
from texkit.tasks.task import Task
from texkit.tasks.text_classifier import TextClassifier

__all__ = [
    "QUANTIZATION_MODES",
    "CausalLM",
    "GenerationSettings",
    "Seq2SeqLM",
    "Task",
    "TextClassifier",
    "enable_lora",
    "load_adapters",
    "lora_enabled",
    "lora_from_hparams",
    "lora_parameter_count",
    "merge_lora",
    "quantization_mode",
    "quantize",
    "save_adapters",
]
