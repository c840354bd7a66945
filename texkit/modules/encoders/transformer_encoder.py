"""TransformerEncoder: a stack of the Transformer blocks of :mod:`texkit.core.transformer`.

In the post-norm order (BERT) the inputs are layer-normalized once before the first block, as
BERT normalizes its embeddings; in the pre-norm order one more layer norm follows the last block.
Dropout on the inputs (``embedding_dropout``) comes first in both orders, after the input layer
norm of the post-norm order.
"""

from __future__ import annotations

from typing import Any

import keras

from texkit.configurable import ModuleBase
from texkit.core.dropout import dropout
from texkit.core.layers import get_initializer
from texkit.core.transformer import (
    STACK_HPARAMS_DOC,
    TransformerBlock,
    check_stack_hparams,
    default_stack_hparams,
    layer_norm,
)

__all__ = ["TransformerEncoder"]


class TransformerEncoder(ModuleBase):
    """The Transformer encoder (Vaswani et al., 2017), in pre-norm or post-norm (BERT) order.

    Call arguments:
        inputs: ``[batch, time, dim]`` embedded inputs (word plus position embeddings).
        sequence_length: ``[batch]`` valid lengths; padded steps are masked out of attention and
            never change the outputs at valid steps. ``None``: nothing is padded.
        training: Keras' training flag (dropout applies only in training).

    Returns:
        ``[batch, time, dim]`` in the layer's compute dtype. Outputs at padded steps are
        computed but meaningless.

    Example:
        >>> encoder = TransformerEncoder({"dim": 64, "num_blocks": 2,
        ...     "multihead_attention": {"num_heads": 4}, "poswise_feedforward": {"dim": 128}})
        >>> encoder(tf.zeros([2, 7, 64]), sequence_length=tf.constant([7, 3])).shape
        TensorShape([2, 7, 64])
    """

    HPARAMS_DOC = {**STACK_HPARAMS_DOC, "name": "Layer name."}

    def __init__(self, hparams: Any = None, **kwargs: Any):
        super().__init__(hparams, **kwargs)
        hp = self.hparams
        check_stack_hparams(hp)
        initializer = get_initializer(hp.initializer)
        self.input_norm = None
        if hp.norm == "post":
            self.input_norm = layer_norm(hp.layer_norm_epsilon, "input_norm", self.dtype_policy)
        self.blocks = [
            TransformerBlock(hp, initializer, hp.norm, name=f"block_{i}", dtype=self.dtype_policy)
            for i in range(hp.num_blocks)
        ]
        self.output_norm = None
        if hp.norm == "pre":
            self.output_norm = layer_norm(hp.layer_norm_epsilon, "output_norm", self.dtype_policy)
        self.seed_generator = keras.random.SeedGenerator() if hp.embedding_dropout > 0 else None

    @classmethod
    def default_hparams(cls) -> dict:
        return {**default_stack_hparams(), "name": "transformer_encoder"}

    def build(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> None:
        if inputs_shape[-1] != self.hparams.dim:
            raise ValueError(
                f"{self.name}: inputs have size {inputs_shape[-1]}, expected dim={self.hparams.dim}"
            )
        for layer in [self.input_norm, *self.blocks, self.output_norm]:
            if layer is not None:
                layer.build(inputs_shape)
        self.built = True

    def call(self, inputs: Any, sequence_length: Any = None, training: Any = None) -> Any:
        x = inputs
        if self.input_norm is not None:
            x = self.input_norm(x)
        x = dropout(x, self.hparams.embedding_dropout, training, self.seed_generator)
        for block in self.blocks:
            x = block(x, sequence_length=sequence_length, training=training)
        if self.output_norm is not None:
            x = self.output_norm(x)
        return x

    def compute_output_shape(self, inputs_shape: Any, *args: Any, **kwargs: Any) -> Any:
        return inputs_shape
