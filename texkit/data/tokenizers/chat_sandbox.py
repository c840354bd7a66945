"""The sandbox chat templates render in: jinja2's environment set up as transformers sets it up,
made strict, and the plain data a template sees (:mod:`~texkit.data.tokenizers.chat_templates`
chooses the template and gives the variables).

The environment: jinja2 (3.1.6 or later; older versions have known sandbox escapes) in an
:class:`~jinja2.sandbox.ImmutableSandboxedEnvironment` with ``trim_blocks`` and
``lstrip_blocks``, the ``loopcontrols`` extension (``{% break %}``, ``{% continue %}``) and a
``{% generation %}...{% endgeneration %}`` tag that renders its body. ``tojson`` keeps non-ASCII
characters and takes ``indent``, ``separators`` and ``sort_keys``; ``raise_exception(message)``
raises :class:`ChatTemplateError` with the template's message; ``strftime_now(format)`` formats
the local time, or the time given to :func:`render_template` (a fixed date for tests);
``namespace(...)`` refuses attribute names that start with ``_``; ``dict(...)`` builds a dict.

A template is data, never code: it reaches only plain values (strings, numbers, booleans,
``None``, lists, tuples and dicts: :func:`template_variables` refuses anything else before
rendering). An attribute the sandbox forbids (``messages.__class__``, ``''.__class__.__mro__``,
``list.append`` in the immutable sandbox) is an error at once, where the sandbox alone renders it
as an empty value. So are ``{% include %}``, ``{% import %}`` and ``{% extends %}`` (a template
reads no file), and, once used, a variable that was not given (test it with ``is defined``, or
give it) and an attribute that a string, list or number lacks. A key missing from a
dict, an index past a list's end and ``first`` of nothing stay undefined without an error, as
templates rely on (``{% if not message.tool_calls %}``). Every failure is a
:class:`ChatTemplateError` naming the template and the template line.

As transformers 5 does, a message's keys whose value is ``None`` are dropped, and a message's
reasoning given as ``reasoning_content``, ``thinking`` or ``reasoning`` is seen under the first
two of these names.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
import numpy as np
from jinja2.exceptions import SecurityError, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from texkit.data.tokenizers.reading import shown

__all__ = ["ChatTemplateError", "render_template", "template_variables"]

# The names a message's reasoning is given under; templates read the first two.
_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
# The deepest nesting of lists and dicts a conversation may have.
_MAX_DEPTH = 64
_MIN_JINJA2 = (3, 1, 6)
# The clock strftime_now reads during a render: a function returning the current time.
_CLOCK: contextvars.ContextVar[Callable[[], datetime.datetime]] = contextvars.ContextVar(
    "chat_template_clock", default=datetime.datetime.now
)


class ChatTemplateError(ValueError):
    """A chat template cannot be chosen, compiled or rendered, or it raised an error itself
    (``raise_exception``).

    Attributes:
        message: What is wrong; for ``raise_exception``, the template's own message.
        where: The template (its name and file), empty when unknown.
        line: The line of the template where it failed, or ``None``.
    """

    def __init__(self, message: str, where: str = "", line: int | None = None):
        self.message = message
        self.where = where
        self.line = line
        at = f", line {line}" if line is not None else ""
        super().__init__(f"chat template {where}{at}: {message}" if where else message)


# -- The environment ------------------------------------------------------------------------


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks what the assistant generates (for
    training masks); renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()


def _is_strict(hint: str | None, obj: Any, name: Any) -> bool:
    """Whether an undefined value is an error when used: a variable not given, or an attribute
    that a string, list or number lacks. A dict's missing key, an index past the end and a
    hint (``first`` of nothing) stay lenient, as templates rely on."""
    if obj is jinja2.utils.missing:
        return hint is None and name is not None
    if isinstance(obj, (Mapping, jinja2.utils.Namespace)):
        return False
    return not isinstance(name, (int, slice))


class _Undefined(jinja2.Undefined):
    """An undefined value: lenient (empty, false) or, in the cases of :func:`_is_strict`, an
    error as soon as it is printed, tested, iterated or compared."""

    __slots__ = ()

    def __new__(cls, hint=None, obj=jinja2.utils.missing, name=None, exc=UndefinedError):
        if cls is _Undefined and _is_strict(hint, obj, name):
            cls = _StrictUndefined
        return super().__new__(cls)


class _StrictUndefined(_Undefined):
    __slots__ = ()
    __iter__ = __str__ = __len__ = _Undefined._fail_with_undefined_error
    __eq__ = __ne__ = __bool__ = __hash__ = _Undefined._fail_with_undefined_error
    __contains__ = _Undefined._fail_with_undefined_error


class _Environment(ImmutableSandboxedEnvironment):
    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        # The sandbox returns an undefined value here, which renders as empty: refuse instead.
        raise SecurityError(
            f"a template may not reach attribute {attribute!r} of a {type(obj).__name__}"
        )

    def get_template(self, name: Any, *args: Any, **kwargs: Any) -> jinja2.Template:
        # {% include %}, {% import %} and {% extends %}: a template reads no other file.
        raise SecurityError(f"a template may not include, import or extend another ({name!r})")

    def select_template(self, names: Any, *args: Any, **kwargs: Any) -> jinja2.Template:
        raise SecurityError(f"a template may not include, import or extend another ({names!r})")


def _check_key(name: Any) -> None:
    if isinstance(name, str) and name.startswith("_"):
        raise SecurityError(f"a namespace attribute may not start with '_': {name!r}")


class _Namespace(jinja2.utils.Namespace):
    """``namespace(...)`` whose attributes may not start with ``_`` (no way to Python's
    internal names through it)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 (``self`` may be a key)
        self, attributes = args[0], dict(*args[1:], **kwargs)
        for name in attributes:
            _check_key(name)
        jinja2.utils.Namespace.__init__(self, attributes)

    def __setitem__(self, name: str, value: Any) -> None:
        _check_key(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)


class _Dict:
    """``dict(...)`` and ``dict.fromkeys(...)`` in a template, without the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any) -> dict:
        return dict.fromkeys(*args)


def _raise_exception(message: Any) -> None:
    raise ChatTemplateError(str(message))


def _strftime_now(format: str) -> str:  # noqa: A002 (the templates' argument name)
    return _CLOCK.get()().strftime(format)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


@functools.cache
def _environment() -> _Environment:
    version = tuple(int(part) for part in re.findall(r"\d+", metadata.version("jinja2"))[:3])
    if version < _MIN_JINJA2:
        raise ImportError(
            f"chat templates need jinja2>=3.1.6 (older versions have known sandbox escapes); "
            f"jinja2 {metadata.version('jinja2')} is installed: pip install -U jinja2"
        )
    environment = _Environment(
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=_Undefined,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    environment.filters["tojson"] = _tojson
    environment.globals.update(
        raise_exception=_raise_exception,
        strftime_now=_strftime_now,
        namespace=_Namespace,
        dict=_Dict(),
    )
    return environment


@functools.lru_cache(maxsize=64)
def _compile(text: str) -> jinja2.Template:
    return _environment().from_string(text)


def _template_line(error: BaseException) -> int | None:
    """The template line where ``error`` was raised, from the frames jinja2 puts in the
    traceback for template code."""
    line = getattr(error, "lineno", None)
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<template>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return line


# -- The data a template sees ---------------------------------------------------------------


def _plain(value: Any, path: str, depth: int = 0) -> Any:
    """``value`` rebuilt of plain JSON-like values (str, int, float, bool, None, list, tuple,
    dict): a template never gets an object with methods of its own."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if depth >= _MAX_DEPTH:
        raise ChatTemplateError(f"{path} is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, np.generic) and not isinstance(value, (np.void, np.object_)):
        return _plain(value.item(), path, depth)
    if isinstance(value, Mapping):
        return {
            _plain(key, f"{path} key", depth + 1): _plain(item, f"{path}[{key!r}]", depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        items = [_plain(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    raise ChatTemplateError(
        f"{path} is a {type(value).__name__}; a template gets strings, numbers, booleans, None, "
        "lists and dicts"
    )


def _message(message: Any, index: int) -> dict:
    """One message as the template sees it: ``None`` values dropped, reasoning aliased."""
    if not isinstance(message, Mapping):
        raise ChatTemplateError(
            f"messages[{index}] is a {type(message).__name__}; a message is a dict "
            '({"role": ..., "content": ...})'
        )
    plain = _plain({k: v for k, v in message.items() if v is not None}, f"messages[{index}]")
    reasoning = next((plain[k] for k in _REASONING_KEYS if k in plain), None)
    if reasoning is not None:
        plain = {"thinking": reasoning, **plain}
        plain["reasoning_content"] = reasoning
    return plain


def _dicts(values: Any, name: str) -> list | None:
    if values is None:
        return None
    if isinstance(values, (str, Mapping)) or not isinstance(values, Sequence):
        raise ChatTemplateError(f"{name} must be a list of dicts, got a {type(values).__name__}")
    for i, value in enumerate(values):
        if not isinstance(value, Mapping):
            kind = "a function: give its JSON schema" if callable(value) else "not a dict"
            raise ChatTemplateError(f"{name}[{i}] is {kind} ({shown(value)})")
    return _plain(list(values), name)


def template_variables(
    messages: Any,
    add_generation_prompt: Any = False,
    tools: Any = None,
    documents: Any = None,
    special_tokens: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The variables a chat template sees, as plain data, checked: ``messages`` (a non-empty
    list of dicts, normalized as transformers 5 does), ``tools`` and ``documents`` (lists of
    dicts, or ``None``), ``add_generation_prompt`` (a bool), the special tokens and the other
    keyword arguments (which override a special token of the same name).

    Raises:
        ChatTemplateError: Naming the value that is not of these kinds (``messages[2]['x']``).
    """
    if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
        raise ChatTemplateError(
            f"messages must be a list of dicts, got a {type(messages).__name__}"
        )
    if not messages:
        raise ChatTemplateError("messages is empty: a conversation has at least one message")
    if not isinstance(add_generation_prompt, bool):
        raise ChatTemplateError(
            f"add_generation_prompt must be True or False, got {shown(add_generation_prompt)}"
        )
    return {
        "messages": [_message(message, i) for i, message in enumerate(messages)],
        "tools": _dicts(tools, "tools"),
        "documents": _dicts(documents, "documents"),
        "add_generation_prompt": add_generation_prompt,
        **_plain(dict(special_tokens or {}), "special_tokens"),
        **_plain(kwargs, "keyword arguments"),
    }


def render_template(
    text: str,
    variables: Mapping[str, Any],
    where: str = "",
    now: datetime.datetime | Callable[[], datetime.datetime] | None = None,
) -> str:
    """A chat template rendered in the sandbox.

    Args:
        text: The template (compiled once and kept: the last 64 templates).
        variables: What it sees (see :func:`template_variables`).
        where: The template's name and file, for the errors.
        now: The time ``strftime_now`` formats (a datetime, or a function returning one); the
            local time when ``None``.

    Raises:
        ChatTemplateError: The template is malformed, reaches beyond its data, or raises an
            error itself (``raise_exception``).
    """
    clock = now if callable(now) or now is None else (lambda: now)
    token = _CLOCK.set(clock or datetime.datetime.now)
    try:
        return _compile(text).render(**variables)
    except ChatTemplateError as e:
        raise ChatTemplateError(e.message, where, _template_line(e)) from None
    except SecurityError as e:
        message = f"not allowed in a template: {e}"
        raise ChatTemplateError(message, where, _template_line(e)) from None
    except UndefinedError as e:
        message = f"{e} (give it, or test it with 'is defined')"
        raise ChatTemplateError(message, where, _template_line(e)) from None
    except TemplateSyntaxError as e:
        raise ChatTemplateError(f"syntax: {e.message}", where, e.lineno) from None
    except (TemplateError, TypeError, ValueError, ArithmeticError, LookupError) as e:
        message = f"{type(e).__name__}: {e}"
        raise ChatTemplateError(message, where, _template_line(e)) from e
    except RecursionError:
        raise ChatTemplateError("recursion too deep", where) from None
    finally:
        _CLOCK.reset(token)
