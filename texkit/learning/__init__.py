"""Learning beyond likelihood: policy gradient, adversarial training and VAEs over texkit's
decoders (see ``docs/guide/sequence_learning.md``)."""

__all__: list[str] = []
