"""The BERT family beyond BERT: RoBERTa, DistilBERT, ALBERT and ELECTRA.

Each class's hyperparameters are the keys of its Hugging Face ``config.json``, so a checkpoint's
config translates one to one (:mod:`texkit.pretrained`); the network is
:class:`~texkit.modules.encoders.bert_family.BERTFamilyEncoder`'s.
"""

from __future__ import annotations

from texkit.hparams import HParamsError, check_positive, check_positive_int, check_rate
from texkit.modules.encoders.bert_encoder import BERT_DOC, bert_architecture, bert_defaults
from texkit.modules.encoders.bert_family import BERTFamilyEncoder, EncoderArchitecture

__all__ = ["ALBERTEncoder", "DistilBERTEncoder", "ELECTRAEncoder", "RoBERTaEncoder"]


class RoBERTaEncoder(BERTFamilyEncoder):
    """RoBERTa (Liu et al., 2019): BERT's network with positions that start after the padding id.

    The first token's position is ``pad_token_id + 1`` (2 in the released models), so inputs
    may have ``max_position_embeddings - pad_token_id - 1`` tokens (512). Hugging Face gives
    padded steps the position ``pad_token_id``; texkit counts on, which changes only the
    outputs at padded steps (masked out everywhere). The released models have one segment id
    (``type_vocab_size: 1``): ``segment_ids`` must then be 0. ``RobertaModel`` checkpoints have
    a pooler; ``RobertaForMaskedLM`` ones do not, and the pooler is then left as initialized
    (reported by the loader).

    Call arguments and returns: as :class:`~texkit.modules.BERTEncoder`.
    """

    HPARAMS_DOC = {
        **BERT_DOC,
        "pad_token_id": "Id of the padding token; the first position is pad_token_id + 1.",
    }

    def architecture(self) -> EncoderArchitecture:
        hp = self.hparams
        check_positive_int(hp, "type_vocab_size", "vocab_size", "max_position_embeddings")
        pad = hp.pad_token_id
        if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad < hp.vocab_size:
            raise HParamsError(
                f"expected a token id, an int in [0, vocab_size={hp.vocab_size}), got {pad!r}",
                "pad_token_id",
            )
        if pad + 1 >= hp.max_position_embeddings:
            raise HParamsError(
                f"{pad}: positions start at pad_token_id + 1, which leaves none of the "
                f"{hp.max_position_embeddings} max_position_embeddings for tokens",
                "pad_token_id",
            )
        return bert_architecture(hp, position_offset=pad + 1)

    @classmethod
    def default_hparams(cls) -> dict:
        # roberta-base.
        return bert_defaults(
            "roberta_encoder",
            vocab_size=50265,
            max_position_embeddings=514,
            type_vocab_size=1,
            layer_norm_eps=1e-5,
            pad_token_id=1,
        )


class ELECTRAEncoder(BERTFamilyEncoder):
    """ELECTRA's discriminator (Clark et al., 2020): BERT's network without a pooler, with a
    projection from ``embedding_size`` to ``hidden_size`` when the two differ (ELECTRA-small).

    ``pooled`` is the first token's hidden state (there is no pooler).

    Call arguments and returns: as :class:`~texkit.modules.BERTEncoder`.
    """

    HPARAMS_DOC = {
        **BERT_DOC,
        "embedding_size": "Size of the embeddings; projected to hidden_size when they differ.",
    }

    def architecture(self) -> EncoderArchitecture:
        hp = self.hparams
        check_positive_int(hp, "embedding_size", "type_vocab_size")
        projected = hp.embedding_size if hp.embedding_size != hp.hidden_size else None
        return bert_architecture(hp, embedding_size=projected, pooler=False)

    @classmethod
    def default_hparams(cls) -> dict:
        # electra-base-discriminator.
        return bert_defaults("electra_encoder", embedding_size=768)


class ALBERTEncoder(BERTFamilyEncoder):
    """ALBERT (Lan et al., 2020): factorized embeddings (``embedding_size``, projected to
    ``hidden_size``) and one Transformer block shared by all ``num_hidden_layers`` layers.

    Only the released layout, one group of one block (``num_hidden_groups: 1``,
    ``inner_group_num: 1``), is supported.

    Call arguments and returns: as :class:`~texkit.modules.BERTEncoder`.
    """

    HPARAMS_DOC = {
        **BERT_DOC,
        "embedding_size": "Size of the embeddings, projected to hidden_size.",
        "num_hidden_groups": "Number of groups of shared blocks (1 only).",
        "inner_group_num": "Blocks per group (1 only).",
        "num_hidden_layers": "Number of times the shared block is applied.",
    }

    def architecture(self) -> EncoderArchitecture:
        hp = self.hparams
        check_positive_int(hp, "embedding_size", "type_vocab_size")
        for key in ("num_hidden_groups", "inner_group_num"):
            if hp[key] != 1:
                raise HParamsError(
                    f"only 1 is supported (the layout of the released ALBERT models), got "
                    f"{hp[key]!r}",
                    key,
                )
        return bert_architecture(hp, embedding_size=hp.embedding_size, shared_layers=True)

    @classmethod
    def default_hparams(cls) -> dict:
        # albert-base-v2.
        return bert_defaults(
            "albert_encoder",
            embedding_size=128,
            vocab_size=30000,
            hidden_act="gelu_new",
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            num_hidden_groups=1,
            inner_group_num=1,
        )


class DistilBERTEncoder(BERTFamilyEncoder):
    """DistilBERT (Sanh et al., 2019): BERT's network with no segment embeddings and no pooler.

    ``segment_ids`` are ignored, and ``pooled`` is the first token's hidden state. Layer norms
    use epsilon 1e-12, as the released models do. Fixed sinusoidal position tables
    (``sinusoidal_pos_embds: true``) are not supported.

    Call arguments and returns: as :class:`~texkit.modules.BERTEncoder`.
    """

    HPARAMS_DOC = {
        "vocab_size": "Number of token ids.",
        "dim": "Size of the embeddings, of every layer and of the outputs.",
        "n_layers": "Number of Transformer blocks.",
        "n_heads": "Number of attention heads; must divide dim.",
        "hidden_dim": "Inner size of the feed-forward networks.",
        "activation": "Feed-forward activation: 'gelu' (exact, erf) or 'relu'.",
        "dropout": "Dropout on the embeddings and on every sub-layer's output.",
        "attention_dropout": "Dropout on the attention weights.",
        "max_position_embeddings": "Rows of the position table.",
        "sinusoidal_pos_embds": "Fixed sinusoidal positions (false only).",
        "initializer_range": "Stddev of the truncated-normal initializer of all weights.",
        "name": "Layer name.",
    }
    _activation_key = "activation"
    _heads_keys = ("n_heads", "dim")

    def architecture(self) -> EncoderArchitecture:
        hp = self.hparams
        check_positive_int(
            hp, "vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings"
        )
        check_rate(hp, "dropout", "attention_dropout")
        check_positive(hp, "initializer_range")
        if hp.sinusoidal_pos_embds:
            raise HParamsError(
                "fixed sinusoidal position tables are not supported", "sinusoidal_pos_embds"
            )
        return EncoderArchitecture(
            vocab_size=hp.vocab_size,
            hidden_size=hp.dim,
            num_layers=hp.n_layers,
            num_heads=hp.n_heads,
            intermediate_size=hp.hidden_dim,
            activation=hp.activation,
            hidden_dropout=hp.dropout,
            attention_dropout=hp.attention_dropout,
            max_positions=hp.max_position_embeddings,
            type_vocab_size=0,
            layer_norm_eps=1e-12,
            initializer_range=hp.initializer_range,
            pooler=False,
        )

    @classmethod
    def default_hparams(cls) -> dict:
        # distilbert-base-uncased.
        return {
            "vocab_size": 30522,
            "dim": 768,
            "n_layers": 6,
            "n_heads": 12,
            "hidden_dim": 3072,
            "activation": "gelu",
            "dropout": 0.1,
            "attention_dropout": 0.1,
            "max_position_embeddings": 512,
            "sinusoidal_pos_embds": False,
            "initializer_range": 0.02,
            "name": "distilbert_encoder",
        }
