"""Hyperparameters: strict merging of user values into documented defaults.

Every configurable texkit class declares ``default_hparams()``, a plain nested dict. A user passes
a (partial) dict of the same shape; :class:`HParams` merges the two and validates the result:

* An unknown key is an error naming its full path and the closest known keys (or, for a name
  Texar had, what replaces it: :mod:`texkit.hparams.texar_names`). Validation goes on after a
  problem: the one :class:`HParamsError` raised lists every problem of the config.
* A value must have the type of its default. An ``int`` is accepted where the default is a
  ``float`` (and stored as a float); nothing else is coerced. A default of ``None`` accepts
  anything; an empty dict ``{}`` accepts any dict (its keys are free-form).
* Nested dicts merge key by key. Lists are replaced whole, except a list whose default is a single
  dict (a template): each user element is merged into that template.
* A dict with both ``type`` and ``kwargs`` names a class. ``type`` is a registry name
  (``"LSTMCell"``) or a dotted path under an allowed prefix (see :mod:`texkit.registry`);
  ``kwargs`` is free-form but every key must be accepted by the class. When ``type`` changes,
  default ``kwargs`` the new class does not accept are dropped; a user kwarg it does not accept
  is an error. A plain string where such a pair is expected is short for ``{type: string}``
  (``activation: gelu``).
* The result is read-only. :meth:`HParams.replace` returns a new validated copy.

Config files are read with ``yaml.safe_load`` only: nothing in a file can import or run code.
:func:`from_texar` translates a Texar module's hparams, listing every change.
"""

from texkit.errors import HParamsError, hparams_scope
from texkit.hparams.core import (
    HParams,
    check_layer_count,
    check_positive,
    check_positive_int,
    check_rate,
    check_table_size,
    check_width,
)
from texkit.hparams.overrides import apply_overrides
from texkit.hparams.rules import accepted_kwargs
from texkit.hparams.texar_migration import from_texar, optimization_from_texar

__all__ = [
    "HParams",
    "HParamsError",
    "accepted_kwargs",
    "apply_overrides",
    "check_layer_count",
    "check_positive",
    "check_positive_int",
    "check_rate",
    "check_table_size",
    "check_width",
    "from_texar",
    "hparams_scope",
    "optimization_from_texar",
]
