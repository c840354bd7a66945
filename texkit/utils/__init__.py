"""Helpers of training scripts: special-token stripping (:mod:`texkit.utils.text`), ids to text
(:mod:`texkit.utils.ids`) and Texar's ``get_instance`` (:mod:`texkit.utils.instances`)."""

from texkit.utils.ids import map_ids_to_strs
from texkit.utils.instances import get_instance
from texkit.utils.text import str_join, strip_bos, strip_eos, strip_special_tokens, strip_token

__all__ = [
    "get_instance",
    "map_ids_to_strs",
    "str_join",
    "strip_bos",
    "strip_eos",
    "strip_special_tokens",
    "strip_token",
]
