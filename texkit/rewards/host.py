"""HostReward: the base of rewards that run Python on the host, through ``tf.numpy_function``.

The compiled step hands the tensors a host reward asks for to Python as NumPy arrays (strings
decoded from UTF-8 into ``str``, an invalid byte becoming U+FFFD), the reward scores them there
and its values come back as a float32 ``[n]`` tensor, checked in Python first (float values,
shape ``[n]``, finite) with errors that name the reward. Eagerly such an error is raised as it
is; in a ``tf.function`` TensorFlow raises it as ``tf.errors.InvalidArgumentError`` whose message
holds the original one. See :mod:`texkit.rewards.base` for where host rewards can run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from texkit.rewards.base import Reward, Samples, check_host_values

__all__ = ["HostReward", "decode_strings"]


def decode_strings(array: np.ndarray) -> np.ndarray:
    """A NumPy array of UTF-8 ``bytes`` (what TensorFlow gives for tf.string) as one of ``str``.

    Arrays of other dtypes are returned unchanged.
    """
    if array.dtype != object and array.dtype.kind != "S":
        return array
    flat = [
        item.decode("utf-8", errors="replace") if isinstance(item, bytes) else item
        for item in array.reshape(-1).tolist()
    ]
    decoded = np.empty(len(flat), dtype=object)
    decoded[:] = flat
    return decoded.reshape(array.shape)


class HostReward(Reward):
    """A reward computed in Python on NumPy arrays (``in_graph`` is ``False``).

    Subclasses implement :meth:`host_inputs` (the tensors to hand over, by name) and
    :meth:`score` (the values, from those arrays).
    """

    in_graph = False

    def host_inputs(self, samples: Samples) -> Mapping[str, tf.Tensor]:
        """The tensors :meth:`score` needs, by name (checked here, in the graph)."""
        raise NotImplementedError(f"{type(self).__name__} must implement host_inputs(samples)")

    def score(self, arrays: Mapping[str, np.ndarray], n: int) -> Any:
        """The ``n`` values, from the arrays of :meth:`host_inputs` (strings decoded)."""
        raise NotImplementedError(f"{type(self).__name__} must implement score(arrays, n)")

    def compute(self, samples: Samples) -> tf.Tensor:
        inputs = dict(self.host_inputs(samples))
        names = list(inputs)
        label = self.display_name

        def host(lengths: np.ndarray, *arrays: np.ndarray) -> np.ndarray:
            n = int(lengths.shape[0])
            pairs = zip(names, arrays, strict=True)
            decoded = {name: decode_strings(np.asarray(a)) for name, a in pairs}
            return check_host_values(self.score(decoded, n), n, label)

        values = tf.numpy_function(
            host, [samples.lengths, *(inputs[name] for name in names)], tf.float32
        )
        values.set_shape([samples.ids.shape[0]])
        return values
