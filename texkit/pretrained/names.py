"""Name tables: which checkpoint entry fills which variable of a texkit module, in every format.

A family's name table is a list of :class:`~texkit.pretrained.checkpoints.Row`: one variable of
the texkit module (its attribute path), the entry's name in each format the family has, and how
the entry is laid out. Every family writes its table the same way, with a :class:`NameTable`:
one call a layer, all formats at once, each format's names given as the layer's path in that
format. The last part of an entry's name follows the format's convention (:data:`NAMINGS`:
Hugging Face's ``weight``/``bias``, Google's ``kernel``/``bias`` and ``gamma``/``beta``,
OpenAI's ``w``/``b`` and ``g``/``b``, KerasHub's ``vars/0``/``vars/1``), so a table says only
where each layer is::

    >>> from texkit.pretrained.checkpoints import CONV1D, HUGGINGFACE, OPENAI
    >>> table = NameTable((HUGGINGFACE, OPENAI))
    >>> rows = table.dense("ffn_inner", {HUGGINGFACE: "h.0.mlp.c_fc", OPENAI: "model/h0/mlp/c_fc"},
    ...                    kernel=CONV1D).rows
    >>> [(r.attribute, r.names[HUGGINGFACE], r.names[OPENAI], r.layout) for r in rows]
    [('ffn_inner.kernel', 'h.0.mlp.c_fc.weight', 'model/h0/mlp/c_fc/w', 'conv1d'), \
('ffn_inner.bias', 'h.0.mlp.c_fc.bias', 'model/h0/mlp/c_fc/b', 'same')]

An entry whose name does not follow the convention (BERT's ``cls/predictions/output_bias``) is
written whole with :meth:`NameTable.entry`. :mod:`~texkit.pretrained.checkpoints` names the
formats and layouts and reads them; :mod:`~texkit.pretrained.loading` loads a table strictly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from texkit.pretrained.checkpoints import (
    DENSE,
    GOOGLE,
    HUGGINGFACE,
    KERAS_HUB,
    OPENAI,
    PER_HEAD,
    SAME,
    Row,
)

__all__ = ["MODULE", "NAMINGS", "NameTable", "Naming", "holds_rows"]

# The part of a family's table that every checkpoint has: the module's own weights. Optional
# parts (a pooler, pretraining heads) have their own names (``Family.optional_parts``).
MODULE = "module"


def holds_rows(owner: object, rows: Iterable[Row]) -> bool:
    """Whether ``owner`` has the layers ``rows`` fill: an optional part that a model was built
    without (the ``pooler`` of an encoder made with ``add_pooling_layer=False``) is ``None``."""
    return all(getattr(owner, row.attribute.split(".")[0], None) is not None for row in rows)


@dataclass(frozen=True)
class Naming:
    """How a format names a layer's weights.

    Attributes:
        separator: between the parts of a name (``.`` or ``/``).
        leaves: the last part of an entry's name for each kind of texkit variable (the last
            part of its attribute: ``kernel``, ``bias``, ``gamma``, ...); ``""``: the layer's
            path alone names the entry (Google's embedding tables).
    """

    separator: str
    leaves: Mapping[str, str]

    def name(self, path: str, variable: str) -> str:
        """The entry of ``variable`` (``kernel``, ``gamma``, ...) of the layer at ``path``."""
        if variable not in self.leaves:
            raise KeyError(f"no name for a {variable!r} weight (write the row with entry())")
        leaf = self.leaves[variable]
        return f"{path}{self.separator}{leaf}" if leaf and path else leaf or path


NAMINGS = {
    HUGGINGFACE: Naming(".", {"kernel": "weight", "bias": "bias", "gamma": "weight",
                              "beta": "bias", "embedding": "weight", "embeddings": "weight",
                              "scale": "weight"}),
    GOOGLE: Naming("/", {"kernel": "kernel", "bias": "bias", "gamma": "gamma", "beta": "beta",
                         "embedding": ""}),
    OPENAI: Naming("/", {"kernel": "w", "bias": "b", "gamma": "g", "beta": "b",
                         "embedding": ""}),
    KERAS_HUB: Naming("/", {"kernel": "vars/0", "bias": "vars/1", "gamma": "vars/0",
                            "beta": "vars/1", "embedding": "vars/0"}),
}  # fmt: skip


class NameTable:
    """A name table being written, for several formats at once.

    Args:
        formats: the formats the table names entries in (each row has a name in every one).
        heads: the ``heads`` of every row (the number of attention heads, which KerasHub's
            per-head layouts need).
        prefixed: the ``prefixed`` of every row (``False`` for heads outside the base model).

    Each method adds rows and returns the table, so calls chain; :attr:`rows` is the result. A
    per-head layout is kept only in a table with a format that stores weights per head
    (KerasHub's); elsewhere it is the plain layout it stands for (:data:`PER_HEAD`).
    """

    def __init__(
        self, formats: Iterable[str], heads: int | None = None, prefixed: bool = True
    ) -> None:
        self.formats = tuple(formats)
        self.heads = heads
        self.prefixed = prefixed
        self.rows: list[Row] = []

    def entry(self, attribute: str, names: Mapping[str, str], layout: str = SAME,
              split: tuple[int, int] | None = None) -> NameTable:  # fmt: skip
        """One variable, from its entry's whole name in each format."""
        missing = [fmt for fmt in self.formats if names.get(fmt) is None]
        if missing:
            raise ValueError(f"{attribute}: no name in {', '.join(missing)}")
        if layout in PER_HEAD and KERAS_HUB not in self.formats:
            layout = PER_HEAD[layout]
        names = {fmt: names[fmt] for fmt in self.formats}
        self.rows.append(Row(attribute, names, layout, self.prefixed, split, self.heads))
        return self

    def weight(self, attribute: str, paths: Mapping[str, str], layout: str = SAME,
               split: tuple[int, int] | None = None) -> NameTable:  # fmt: skip
        """One variable of the layer at ``paths`` (its path in each format); the variable's
        kind (the attribute's last part: ``embedding``, ``scale``, ...) names the entry."""
        variable = attribute.rsplit(".", 1)[-1]
        names = {
            fmt: None if paths.get(fmt) is None else NAMINGS[fmt].name(paths[fmt], variable)
            for fmt in self.formats
        }
        return self.entry(attribute, names, layout, split)

    def dense(self, attribute: str, paths: Mapping[str, str], kernel: str = DENSE,
              bias: str | None = SAME, split: tuple[int, int] | None = None
              ) -> NameTable:  # fmt: skip
        """A dense layer's kernel and bias (``bias=None``: it has none), in these layouts."""
        self.weight(f"{attribute}.kernel", paths, kernel, split)
        return self if bias is None else self.weight(f"{attribute}.bias", paths, bias, split)

    def norm(self, attribute: str, paths: Mapping[str, str]) -> NameTable:
        """A layer norm's ``gamma`` and ``beta``."""
        return self.weight(f"{attribute}.gamma", paths).weight(f"{attribute}.beta", paths)
