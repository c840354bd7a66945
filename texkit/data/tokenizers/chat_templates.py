"""Chat templates: the Jinja templates of a tokenizer folder that turn a conversation into the
model's prompt, rendered in jinja2's sandbox the way transformers renders them.

Where they come from (:meth:`ChatTemplates.from_folder`), as transformers reads a folder:

* ``chat_template.jinja`` (the template named ``"default"``) and
  ``additional_chat_templates/<name>.jinja`` (one named template each), as transformers 5 saves
  them. When any of these files is there, ``tokenizer_config.json`` is not read for templates.
* Otherwise ``"chat_template"`` in ``tokenizer_config.json``, as older folders hold it: a string
  (the default template) or a list of ``{"name": ..., "template": ...}`` objects.
* A folder with neither has no template: rendering is then an error naming the folder and the
  files looked for, unless a template is given (``chat_template="{% for m in messages %}..."``).

Which template renders: the one named by ``chat_template`` (``"tool_use"``...) or the text
given there; else ``"tool_use"`` when tools are given and the folder has it; else
``"default"``. A folder of named templates without a ``"default"`` needs the name.

How it renders: as transformers renders it, in jinja2's sandbox
(:mod:`~texkit.data.tokenizers.chat_sandbox`: what a template sees and may reach). The template
sees ``messages``, ``tools``, ``documents``, ``add_generation_prompt``, the tokenizer's special
tokens (``bos_token``, ``eos_token``...: :data:`SPECIAL_TOKEN_NAMES`) and any other keyword
argument; ``strftime_now`` formats the ``now`` given (a fixed date for tests) or the local time.
A template is data, never code: reaching Python's internals (``messages.__class__``) or a
variable not given is a :class:`ChatTemplateError`, never a silently empty value.

Differences from transformers: a ``chat_template`` that is neither a template name of the folder
nor Jinja (it holds no ``{{``, ``{%`` or ``{#``) is an error, where transformers renders it as a
constant text; ``tools`` are JSON schemas (dicts), not Python functions; one conversation per
call; no ``continue_final_message`` or assistant-token masks.

Example:
    >>> templates = ChatTemplates(
    ...     "{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"
    ...     "{% if add_generation_prompt %}<assistant>{% endif %}"
    ... )
    >>> templates.render(
    ...     [{"role": "user", "content": "Hi"}],
    ...     add_generation_prompt=True,
    ...     special_tokens={"eos_token": "</s>"},
    ... )
    '<user>Hi</s><assistant>'
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from texkit.data.tokenizers.chat_sandbox import (
    ChatTemplateError,
    render_template,
    template_variables,
)
from texkit.data.tokenizers.reading import present, read_file, read_json_object, shown
from texkit.data.tokenizers.tokenizer_config import read_tokenizer_config

__all__ = [
    "CONFIG_FILE",
    "DEFAULT_NAME",
    "SPECIAL_TOKEN_NAMES",
    "TEMPLATE_DIR",
    "TEMPLATE_FILE",
    "ChatTemplateError",
    "ChatTemplateMixin",
    "ChatTemplates",
    "apply_chat_template",
]

TEMPLATE_FILE = "chat_template.jinja"
TEMPLATE_DIR = "additional_chat_templates"
CONFIG_FILE = "tokenizer_config.json"
DEFAULT_NAME = "default"
TOOL_USE_NAME = "tool_use"
# The special tokens a template sees as variables (transformers' named special tokens).
SPECIAL_TOKEN_NAMES = (
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
)
_JINJA_MARKS = re.compile(r"\{[{%#]")


# -- The templates of a folder --------------------------------------------------------------


class ChatTemplates:
    """A tokenizer's chat templates by name, and their rendering (see the module).

    Args:
        templates: One template (named ``"default"``), or templates by name; ``None`` for
            none (rendering then needs a template given as ``chat_template``).
        source: Where they come from (a folder), for the errors.
        files: The file each template was read from, by name, for the errors.
    """

    def __init__(
        self,
        templates: str | Mapping[str, str] | None = None,
        source: str = "",
        files: Mapping[str, str] | None = None,
    ):
        if isinstance(templates, str):
            templates = {DEFAULT_NAME: templates}
        self._templates = dict(templates or {})
        for name, text in self._templates.items():
            if not isinstance(name, str) or not isinstance(text, str):
                raise ChatTemplateError(
                    f"chat templates of {source or 'the argument'}: template {shown(name)} must "
                    f"be a string named by a string, got a {type(text).__name__}"
                )
        self.source = source
        self._files = dict(files or {})

    @classmethod
    def from_folder(cls, folder: str | os.PathLike) -> ChatTemplates:
        """The chat templates of a tokenizer folder (any ``tf.io.gfile`` path), read as
        transformers reads them (see the module); none when it has none.

        Raises:
            FileNotFoundError: ``folder`` is not a folder.
            ChatTemplateError: ``tokenizer_config.json``'s ``chat_template`` is malformed.
            ValueError: A template file is not UTF-8 text.
        """
        folder = os.fspath(folder)
        if not tf.io.gfile.isdir(folder):
            raise FileNotFoundError(f"ChatTemplates: folder {folder!r} does not exist or is a file")
        templates: dict[str, str] = {}
        files: dict[str, str] = {}
        paths = []
        if present(os.path.join(folder, TEMPLATE_FILE)):
            paths.append((DEFAULT_NAME, os.path.join(folder, TEMPLATE_FILE)))
        extra = os.path.join(folder, TEMPLATE_DIR)
        if tf.io.gfile.isdir(extra):
            for entry in sorted(tf.io.gfile.listdir(extra)):
                if entry.endswith(".jinja"):
                    paths.append((entry.removesuffix(".jinja"), os.path.join(extra, entry)))
        for name, path in paths:
            templates[name] = read_file(path, "ChatTemplates", "template", what="chat template")
            files[name] = path
        config_path = os.path.join(folder, CONFIG_FILE)
        if not templates and present(config_path):
            config = read_json_object(config_path, "ChatTemplates")
            templates = _config_templates(config.get("chat_template"), config_path)
            files = {name: f"{config_path} 'chat_template'" for name in templates}
        return cls(templates, source=folder, files=files)

    @property
    def names(self) -> tuple[str, ...]:
        """The templates' names."""
        return tuple(self._templates)

    def __len__(self) -> int:
        return len(self._templates)

    def __contains__(self, name: object) -> bool:
        return name in self._templates

    def __getitem__(self, name: str) -> str:
        if name not in self._templates:
            raise KeyError(f"no chat template {name!r} in {self._where_all()}")
        return self._templates[name]

    def __repr__(self) -> str:
        return f"ChatTemplates({list(self._templates)}, source={self.source!r})"

    def _where_all(self) -> str:
        return repr(self.source) if self.source else "the given templates"

    def _describe(self, name: str) -> str:
        file = self._files.get(name)
        return f"{name!r} ({file})" if file else f"{name!r} of {self._where_all()}"

    def template(self, chat_template: str | None = None, tools: Any = None) -> str:
        """The text of the template that renders (see the module for the choice)."""
        return self._choose(chat_template, tools)[0]

    def _choose(self, chat_template: str | None, tools: Any) -> tuple[str, str]:
        """The template's text and its description for errors."""
        if chat_template is not None:
            if not isinstance(chat_template, str):
                raise ChatTemplateError(
                    f"chat_template must be a template name or a template, got a "
                    f"{type(chat_template).__name__}"
                )
            if chat_template in self._templates:
                return self._templates[chat_template], self._describe(chat_template)
            if _JINJA_MARKS.search(chat_template):
                return chat_template, "given as chat_template"
            raise ChatTemplateError(
                f"chat_template {shown(chat_template)} is neither a template of "
                f"{self._where_all()} (it has {list(self._templates)}) nor a Jinja template "
                "(it holds no '{{', '{%' or '{#')"
            )
        if tools is not None and TOOL_USE_NAME in self._templates:
            return self._templates[TOOL_USE_NAME], self._describe(TOOL_USE_NAME)
        if DEFAULT_NAME in self._templates:
            return self._templates[DEFAULT_NAME], self._describe(DEFAULT_NAME)
        if self._templates:
            raise ChatTemplateError(
                f"{self._where_all()} has named chat templates {list(self._templates)} and no "
                f"{DEFAULT_NAME!r}: pass chat_template=<one of these names>"
            )
        if self.source:
            raise ChatTemplateError(
                f"folder {self.source!r} has no chat template: looked for {TEMPLATE_FILE}, "
                f"{TEMPLATE_DIR}/*.jinja and 'chat_template' in {CONFIG_FILE}; pass "
                "chat_template=<a Jinja template>"
            )
        raise ChatTemplateError("no chat template: pass chat_template=<a Jinja template>")

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        add_generation_prompt: bool = False,
        chat_template: str | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        special_tokens: Mapping[str, str] | None = None,
        now: datetime.datetime | Callable[[], datetime.datetime] | None = None,
        **kwargs: Any,
    ) -> str:
        """The prompt of a conversation: the template rendered as transformers renders it.

        Args:
            messages: The conversation: dicts with ``"role"`` and ``"content"`` (and whatever
                else the template reads, e.g. ``"tool_calls"``).
            add_generation_prompt: End with the header of the assistant's next turn.
            chat_template: A template name of these templates, or a Jinja template.
            tools: The tools' JSON schemas (dicts), or ``None``.
            documents: Documents for retrieval-augmented templates (dicts), or ``None``.
            special_tokens: The tokenizer's special tokens by name (``{"bos_token": "<s>"}``).
            now: The time ``strftime_now`` formats (a datetime, or a function returning one);
                the local time when ``None``.
            **kwargs: More variables for the template (they override special tokens).

        Raises:
            ChatTemplateError: No template, a malformed one, data that is not plain, a template
                that reaches beyond its data or raises an error.
        """
        text, where = self._choose(chat_template, tools)
        variables = template_variables(
            messages, add_generation_prompt, tools, documents, special_tokens, **kwargs
        )
        return render_template(text, variables, where, now)


def _config_templates(value: Any, path: str) -> dict[str, str]:
    """The templates of ``tokenizer_config.json``'s ``chat_template``: a string, or a list of
    ``{"name": ..., "template": ...}``."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {DEFAULT_NAME: value}
    if not isinstance(value, list):
        raise ChatTemplateError(
            f"{path}: 'chat_template' must be a string or a list of "
            f'{{"name": ..., "template": ...}}, got a {type(value).__name__}'
        )
    templates: dict[str, str] = {}
    for i, entry in enumerate(value):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("name"), str)
            or not isinstance(entry.get("template"), str)
        ):
            raise ChatTemplateError(
                f"{path}: 'chat_template'[{i}] must be "
                f'{{"name": <string>, "template": <string>}}, got {shown(entry)}'
            )
        if entry["name"] in templates:
            raise ChatTemplateError(
                f"{path}: 'chat_template' names template {entry['name']!r} twice"
            )
        templates[entry["name"]] = entry["template"]
    return templates


# -- Tokenizers -----------------------------------------------------------------------------


def _special_tokens(tokenizer: Any) -> dict[str, str]:
    """The tokenizer's special tokens (:data:`SPECIAL_TOKEN_NAMES` it has, not ``None``)."""
    tokens = {}
    for name in SPECIAL_TOKEN_NAMES:
        token = getattr(tokenizer, name, None)
        if token is None:
            continue
        if not isinstance(token, str):
            raise ChatTemplateError(
                f"{type(tokenizer).__name__}.{name} must be a string or None, got a "
                f"{type(token).__name__}"
            )
        tokens[name] = token
    return tokens


def apply_chat_template(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    add_generation_prompt: bool = False,
    tokenize: bool = False,
    chat_template: str | None = None,
    **kwargs: Any,
) -> Any:
    """A conversation rendered by a tokenizer's chat template, as text or as ids.

    Args:
        tokenizer: Has ``chat_templates`` (a :class:`ChatTemplates`, or ``None``), its special
            tokens as string attributes (``bos_token``...; ``None`` or absent when it has
            none: :data:`SPECIAL_TOKEN_NAMES`) and ``tokenize(text)``.
        messages: The conversation (see :meth:`ChatTemplates.render`).
        add_generation_prompt: End with the header of the assistant's next turn.
        tokenize: Return ``tokenizer.tokenize(text)``: the text's ids, without special tokens
            added again (the template wrote them).
        chat_template: A template name of the tokenizer's templates, or a Jinja template.
        **kwargs: ``tools``, ``documents``, ``now`` and the template's own variables (see
            :meth:`ChatTemplates.render`).

    Returns:
        The prompt (a string), or its ids when ``tokenize``.
    """
    templates = getattr(tokenizer, "chat_templates", None)
    if templates is None:
        templates = ChatTemplates(source="")
    text = templates.render(
        messages,
        add_generation_prompt=add_generation_prompt,
        chat_template=chat_template,
        special_tokens=_special_tokens(tokenizer),
        **kwargs,
    )
    return tokenizer.tokenize(text) if tokenize else text


class ChatTemplateMixin:
    """Gives a tokenizer :meth:`apply_chat_template`. The class sets ``chat_templates`` (a
    :class:`ChatTemplates`, e.g. ``ChatTemplates.from_folder(folder)``) and its special
    tokens as string attributes (``bos_token``, ``eos_token``...), and has ``tokenize``."""

    chat_templates: ChatTemplates | None = None

    def attach_chat_templates(self, folder: str) -> None:
        """Reads ``folder``'s chat templates and the text of its special tokens (the templates'
        ``bos_token``, ``eos_token``...) from ``tokenizer_config.json`` and
        ``special_tokens_map.json``; a folder without a template is an error only when one
        is rendered."""
        self.chat_templates = ChatTemplates.from_folder(folder)
        config = read_tokenizer_config(folder, f"{type(self).__name__}.from_pretrained")
        for role, token in config.tokens.items():
            setattr(self, f"{role}_token", token)

    def apply_chat_template(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        chat_template: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """The conversation rendered by this tokenizer's chat template: the prompt, or its ids
        without special tokens added again when ``tokenize`` (see
        :func:`~texkit.data.tokenizers.chat_templates.apply_chat_template`)."""
        return apply_chat_template(
            self, messages, add_generation_prompt, tokenize, chat_template, **kwargs
        )
