"""Pretrained word vectors (word2vec, GloVe) as the initial embedding table of a vocabulary.

:func:`load_word2vec` and :func:`load_glove` return a :class:`PretrainedEmbedding`: a
``[vocab_size, dim]`` float32 matrix, row ``i`` for the token of id ``i``, ready for
``WordEmbedder(init_value=...)``. :class:`Embedding` does the same from hparams (Texar's).

* :mod:`~texkit.data.embedding.readers`: the word2vec and GloVe file formats, how they are read,
  and the errors a broken file raises.
* :mod:`~texkit.data.embedding.table`: the matrix built for a vocabulary, and the random rows of
  the tokens missing from the file.
* :mod:`~texkit.data.embedding.from_hparams`: :class:`Embedding`, configured by hparams.

``vocab`` is a :class:`texkit.data.Vocab` (its ``token_to_id_map_py``) or any mapping of token to
id with the ids ``0 .. n-1``.
"""

from texkit.data.embedding.from_hparams import Embedding
from texkit.data.embedding.readers import load_glove, load_word2vec
from texkit.data.embedding.table import EmbeddingFileError, PretrainedEmbedding

__all__ = ["Embedding", "EmbeddingFileError", "PretrainedEmbedding", "load_glove", "load_word2vec"]
