"""Evaluation metrics: BLEU through sacrebleu (:mod:`texkit.evals.bleu`), and accuracy and
perplexity over batches (:mod:`texkit.evals.token_metrics`)."""

from texkit.evals.bleu import (
    BLEUScore,
    corpus_bleu,
    corpus_bleu_moses,
    sentence_bleu,
    sentence_bleu_moses,
)
from texkit.evals.token_metrics import Accuracy, Perplexity, accuracy, perplexity

__all__ = [
    "Accuracy",
    "BLEUScore",
    "Perplexity",
    "accuracy",
    "corpus_bleu",
    "corpus_bleu_moses",
    "perplexity",
    "sentence_bleu",
    "sentence_bleu_moses",
]
