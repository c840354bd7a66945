"""Evaluation metrics, each a function over a corpus and a Keras metric that accumulates over a
dataset (``update_state`` per batch, ``result()`` over everything seen):

* translation and generation: BLEU, chrF and TER through sacrebleu (:mod:`~texkit.evals.bleu`,
  :mod:`~texkit.evals.chrf_ter`, whose :class:`BLEU` is BLEU's Keras metric), ROUGE through
  Google's ``rouge-score`` (:mod:`~texkit.evals.rouge`), word and character error rates
  (:mod:`~texkit.evals.error_rates`);
* extractive QA: SQuAD exact match and F1 (:mod:`~texkit.evals.squad`);
* tagging: entity-level precision, recall and F1 for IOB1, IOB2, IOBES and BILOU
  (:mod:`~texkit.evals.entities`), token accuracy (:mod:`~texkit.evals.token_metrics`);
* classification and regression (GLUE): Matthews correlation, F1, Pearson and Spearman
  (:mod:`~texkit.evals.classification`, :mod:`~texkit.evals.correlation`);
* language models: perplexity (:mod:`~texkit.evals.token_metrics`).
"""

from texkit.evals.bleu import (
    BLEUScore,
    corpus_bleu,
    corpus_bleu_moses,
    sentence_bleu,
    sentence_bleu_moses,
)
from texkit.evals.chrf_ter import BLEU, CHRF, TER, chrf, ter
from texkit.evals.classification import (
    CorpusF1Score,
    MatthewsCorrelation,
    f1_score,
    matthews_corrcoef,
)
from texkit.evals.correlation import (
    CorpusPearsonCorrelation,
    CorpusSpearmanCorrelation,
    pearson_correlation,
    spearman_correlation,
)
from texkit.evals.entities import EntityF1, entity_f1
from texkit.evals.error_rates import CharErrorRate, WordErrorRate, char_error_rate, word_error_rate
from texkit.evals.rouge import ROUGE, UnicodeTokenizer, rouge
from texkit.evals.squad import SQuAD, normalize_answer, squad, squad_exact_match, squad_f1
from texkit.evals.token_metrics import Accuracy, Perplexity, accuracy, perplexity

__all__ = [
    "BLEU",
    "Accuracy",
    "BLEUScore",
    "CHRF",
    "CharErrorRate",
    "CorpusF1Score",
    "CorpusPearsonCorrelation",
    "CorpusSpearmanCorrelation",
    "EntityF1",
    "MatthewsCorrelation",
    "Perplexity",
    "ROUGE",
    "SQuAD",
    "TER",
    "UnicodeTokenizer",
    "WordErrorRate",
    "accuracy",
    "char_error_rate",
    "chrf",
    "corpus_bleu",
    "corpus_bleu_moses",
    "entity_f1",
    "f1_score",
    "matthews_corrcoef",
    "normalize_answer",
    "pearson_correlation",
    "perplexity",
    "rouge",
    "sentence_bleu",
    "sentence_bleu_moses",
    "spearman_correlation",
    "squad",
    "squad_exact_match",
    "squad_f1",
    "ter",
    "word_error_rate",
]
