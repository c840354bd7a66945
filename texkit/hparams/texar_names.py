"""Texar's names in a texkit config: the hints an error gives when a key or a ``type`` is one.

texkit keeps Texar's hparams layout, so a Texar config mostly carries over; where texkit
departs (Keras' names for cells, optimizers and initializers, decoding strategies chosen at
call time, ...), an unknown key or ``type`` that Texar had gets a hint saying what replaces it
instead of the nearest spelling (which misleads: Texar's ``AdamOptimizer`` is nearest to
``LossScaleOptimizer``).
"""

from __future__ import annotations

__all__ = ["TEXAR_KEYS", "TEXAR_TYPES", "texar_key_hint", "texar_type_hint"]

_DECODING = (
    "texkit chooses the decoding strategy when the decoder is called: "
    "decoder(..., decoding_strategy='train_greedy' | 'infer_greedy' | 'infer_sample'), or "
    "decoder.beam_search(...); remove it from the hparams"
)

# Keys of Texar's hparams that texkit names otherwise or drops: key -> what to write instead.
# A key listed under a parent ("dropout.input_size") applies only there.
TEXAR_KEYS: dict[str, str] = {
    "num_units": "Texar's 'num_units' (of cells and attention) is 'units' in texkit, as in Keras",
    "kernel_size": (
        "Texar's 'kernel_size' is 'kernel_sizes' in texkit: a list, one kernel size per "
        "parallel convolution"
    ),
    "allow_smaller_final_batch": (
        "Texar's 'allow_smaller_final_batch' is the opposite of texkit's 'drop_remainder' "
        "(allow_smaller_final_batch: false is drop_remainder: true)"
    ),
    "helper_train": _DECODING,
    "helper_infer": _DECODING,
    "use_bert_config": (
        "Texar's 'use_bert_config: true' is texkit's 'norm: post' (post-norm blocks, as BERT), "
        "'false' is 'norm: pre'"
    ),
    "pretrained_model_name": (
        "texkit loads pretrained weights with the class's from_pretrained(path or name), e.g. "
        "BERTEncoder.from_pretrained('all-MiniLM-L6-v2'); remove it from the hparams"
    ),
    "cache_dir": "texkit loads pretrained weights with the class's from_pretrained(path)",
    "loss_label_confidence": (
        "Texar's 'loss_label_confidence' c is texkit's label_smoothing = 1 - c (a loss "
        "argument; texkit spreads it over all V classes, Texar over the V - 1 others)"
    ),
    "max_decoding_length_train": (
        "texkit's teacher forcing runs for the targets' length; the inference length is "
        "'max_decoding_length_infer' (or the call's max_decoding_length)"
    ),
    "dropout.input_size": (
        "texkit draws variational dropout masks from the inputs' shape, so Texar's "
        "'input_size' is not needed: remove it"
    ),
}

# Texar's (TensorFlow 1) class and function names for a ``type``: name -> texkit's (Keras') name.
TEXAR_TYPES: dict[str, str] = {
    "AdamOptimizer": "Adam",
    "AdamWOptimizer": "AdamW",
    "GradientDescentOptimizer": "SGD",
    "MomentumOptimizer": "SGD (with kwargs momentum)",
    "RMSPropOptimizer": "RMSprop",
    "AdagradOptimizer": "Adagrad",
    "AdadeltaOptimizer": "Adadelta",
    "BasicLSTMCell": "LSTMCell",
    "LSTMBlockCell": "LSTMCell",
    "BasicRNNCell": "SimpleRNNCell",
    "LayerNormBasicLSTMCell": "LSTMCell",
    "exponential_decay": "ExponentialDecay",
    "inverse_time_decay": "InverseTimeDecay",
    "natural_exp_decay": "ExponentialDecay",
    "piecewise_constant": "PiecewiseConstantDecay",
    "polynomial_decay": "PolynomialDecay",
    "cosine_decay": "CosineDecay",
    "random_uniform_initializer": "RandomUniform",
    "random_normal_initializer": "RandomNormal",
    "truncated_normal_initializer": "TruncatedNormal",
    "glorot_uniform_initializer": "GlorotUniform",
    "glorot_normal_initializer": "GlorotNormal",
    "variance_scaling_initializer": "VarianceScaling",
    "orthogonal_initializer": "Orthogonal",
    "constant_initializer": "Constant",
    "zeros_initializer": "Zeros",
    "ones_initializer": "Ones",
    "xavier_initializer": "GlorotUniform",
    "identity": "linear (or null: no activation)",
    "clip_by_global_norm": "gradient_clip: {mode: global_norm, value: ...} in optimization",
    "clip_by_norm": "gradient_clip: {mode: norm, value: ...} in optimization",
    "clip_by_value": "gradient_clip: {mode: value, value: ...} in optimization",
}

_TYPE_NOTES = {
    "AdamOptimizer": "; Texar's kwargs.learning_rate moves to optimization.learning_rate",
    "MomentumOptimizer": "; Texar's kwargs.learning_rate moves to optimization.learning_rate",
}


def texar_key_hint(key: str, path: str = "") -> str | None:
    """The hint for an unknown ``key`` (at the dotted ``path``, which ends with it) that Texar
    had; entries of :data:`TEXAR_KEYS` with a parent (``dropout.input_size``) match only there."""
    parts = path.split(".") if path else [key]
    scoped = ".".join(parts[-2:])
    if len(parts) >= 2 and scoped in TEXAR_KEYS:
        return TEXAR_KEYS[scoped]
    return TEXAR_KEYS.get(key) if "." not in key else None


def texar_type_hint(name: object) -> str | None:
    """The hint for a ``type`` that is one of Texar's (TF 1) names."""
    if not isinstance(name, str):
        return None
    short = name.rsplit(".", 1)[-1]
    if short not in TEXAR_TYPES:
        return None
    return f"Texar's {short!r} is {TEXAR_TYPES[short]!r} in texkit{_TYPE_NOTES.get(short, '')}"
