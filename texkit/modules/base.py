"""ModuleBase: the Keras layer every texkit module derives from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras

from texkit import registry
from texkit.configurable import Configurable
from texkit.hparams import HParams, HParamsError

__all__ = ["ModuleBase"]


def _unique_name(name: str) -> str:
    try:
        from keras.src.utils.naming import uniquify
    except ImportError:  # pragma: no cover - private Keras helper moved
        return name
    return uniquify(name)


class ModuleBase(Configurable, keras.layers.Layer):
    """Base class of texkit modules: a Keras layer configured by hparams.

    * ``__init__(hparams=None, **kwargs)`` merges ``hparams`` into :meth:`default_hparams`
      (strictly, see :class:`~texkit.HParams`) and passes ``hparams.name`` to Keras as the layer
      name. When the name is left at its default, Keras numbers repeated names
      (``word_embedder``, ``word_embedder_1``) so several modules fit in one model.
    * ``get_config()`` returns the hparams (plus the Keras base config and the constructor's
      other arguments), so ``keras.saving`` round-trips every module and every model made of them.
    * ``call(..., training=None)`` follows Keras' ``training`` flag; there is no global mode.

    Subclasses define ``default_hparams()`` and ``HPARAMS_DOC``, create weights in ``build`` and
    compute in ``call``; classes defined inside ``texkit`` register themselves under their class
    name, for ``type:`` in configs and for ``keras.saving``.
    """

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        ours = cls.__module__.split(".")[0] == "texkit"
        # texkit's classes save as "texkit>Name"; a user's as "<its module>>Name", so two user
        # classes of the same name in different modules never overwrite each other.
        package = "texkit" if ours else cls.__module__
        previous = keras.saving.get_registered_object(f"{package}>{cls.__name__}")
        if previous is not None and previous.__qualname__ != cls.__qualname__:
            raise TypeError(
                f"{cls.__module__}.{cls.__qualname__}: Keras already has {package}>{cls.__name__} "
                f"for {previous.__module__}.{previous.__qualname__}; rename one of them"
            )
        keras.saving.register_keras_serializable(package=package)(cls)
        if ours and not cls.__name__.startswith("_"):
            registry.register(cls)

    def __init__(self, hparams: Mapping | HParams | None = None, **kwargs: Any):
        hp = self.make_hparams(hparams)
        name = kwargs.pop("name", None)
        if name is None:
            default_name = self.default_hparams().get("name")
            name = _unique_name(hp.name) if hp.name == default_name else hp.name
        if not isinstance(name, str) or not name or "/" in name:
            # Keras uses '/' to separate the parts of weight paths.
            raise HParamsError(f"expected a non-empty string without '/', got {name!r}", "name")
        if name != hp.name:
            hp = hp.replace(name=name)
        super().__init__(name=name, **kwargs)
        self._hparams = hp

    @classmethod
    def default_hparams(cls) -> dict:
        return {"name": "module"}

    def get_config(self) -> dict:
        config = super().get_config()
        config["hparams"] = self.hparams.todict()
        return config
