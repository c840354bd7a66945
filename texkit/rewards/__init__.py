"""Rewards: scores of sampled sequences for sequence-level learning (see
``docs/guide/sequence_learning.md``)."""

__all__: list[str] = []
