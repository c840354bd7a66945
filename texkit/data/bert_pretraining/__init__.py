"""BERT pretraining data: next-sentence pairs and masked-LM masking (Devlin et al., 2019).

Three steps, each usable alone:

1. :func:`make_nsp_pairs` (plain Python, seeded NumPy) cuts documents of wordpiece ids into
   sentence pairs ``A``/``B`` for next-sentence prediction, with the rules of Google's
   ``create_pretraining_data.py`` (:mod:`~texkit.data.bert_pretraining.sentence_pairs`).
2. :func:`pack_pair` lays a pair out as ``[CLS] A [SEP] B [SEP]`` padded to ``max_seq_length``
   (:mod:`~texkit.data.bert_pretraining.sentence_pairs`).
3. :class:`MaskedLMMasker` masks a packed sequence in the graph (stateless random ops, static
   shapes: it runs in ``tf.data``, in ``tf.function`` and under XLA); the masking rule and where
   it departs from the original are in :mod:`~texkit.data.bert_pretraining.masking`.

:func:`pretraining_dataset` (:mod:`~texkit.data.bert_pretraining.dataset`) chains 2 and 3 into a
``tf.data.Dataset`` of feature dicts:

========================  ===========================  =========================================
feature                   shape, dtype                 meaning
========================  ===========================  =========================================
``input_ids``             [max_seq_length] int32       ``[CLS] A [SEP] B [SEP]``, masked, then
                                                       ``pad_id`` (0)
``segment_ids``           [max_seq_length] int32       0 for ``[CLS] A [SEP]``, 1 for ``B [SEP]``,
                                                       0 on padding
``sequence_length``       [] int32                     ``len(A) + len(B) + 3``
``masked_lm_positions``   [max_predictions] int32      positions predicted, ascending; 0 pads
``masked_lm_ids``         [max_predictions] int32      the original ids there; 0 pads
``masked_lm_weights``     [max_predictions] float32    1.0 for a prediction, 0.0 for padding
``next_sentence_label``   [] int32                     1: B is a random sentence ("is random
                                                       next", the original's convention);
                                                       0: B follows A in the document
========================  ===========================  =========================================

With ``batch_size`` every feature gains a leading batch dimension (``drop_remainder=True`` keeps
it static).

Randomness is reproducible: :func:`make_nsp_pairs` draws from ``np.random.default_rng(seed)``;
the masker from stateless ops keyed by a ``[2]`` seed, which :func:`pretraining_dataset` makes
from ``(seed, index of the instance)``. Masks are therefore static (the same every epoch, as in
the original); for new masks, build the dataset again with another seed (e.g. ``seed + epoch``).

Bad input raises at once, never part-way through training: :func:`make_nsp_pairs` skips (and
counts, in :class:`NSPInstances`) empty sentences and documents, and raises ``ValueError`` for
negative or non-integer ids, fewer than two non-empty documents, or bad arguments;
:func:`pack_pair` raises if a pair does not fit; :func:`pretraining_dataset` raises, naming the
instance, for an empty side, a pair too long, an id outside ``[0, vocab_size)`` or a label other
than 0/1. All arguments are checked with errors that name them.
"""

from texkit.data.bert_pretraining.dataset import pretraining_dataset
from texkit.data.bert_pretraining.masking import MaskedLMMasker
from texkit.data.bert_pretraining.sentence_pairs import NSPInstances, make_nsp_pairs, pack_pair

__all__ = [
    "NSPInstances",
    "make_nsp_pairs",
    "pack_pair",
    "MaskedLMMasker",
    "pretraining_dataset",
]
