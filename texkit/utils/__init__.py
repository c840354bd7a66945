"""Helpers of training scripts: special-token stripping (:mod:`texkit.utils.text`), ids to text
(:mod:`texkit.utils.ids`), Texar's ``get_instance`` (:mod:`texkit.utils.instances`), and what
Keras' ``fit`` prints (:mod:`texkit.utils.fit_output`)."""

from texkit.utils.fit_output import (
    EndOfDataExpected,
    KerasFitDefaults,
    end_of_data_expected,
    keras_verbose,
)
from texkit.utils.ids import map_ids_to_strs
from texkit.utils.instances import get_instance
from texkit.utils.text import str_join, strip_bos, strip_eos, strip_special_tokens, strip_token

__all__ = [
    "EndOfDataExpected",
    "KerasFitDefaults",
    "end_of_data_expected",
    "get_instance",
    "keras_verbose",
    "map_ids_to_strs",
    "str_join",
    "strip_bos",
    "strip_eos",
    "strip_special_tokens",
    "strip_token",
]
