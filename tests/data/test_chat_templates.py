"""Chat templates against transformers' ``apply_chat_template``, and templates as data.

The fixture (``tests/fixtures/chat_templates/``, made by ``make_chat_templates.py`` with
transformers 5.24) holds tokenizer folders saved by transformers in each layout (transformers 5's
``chat_template.jinja`` and ``additional_chat_templates/``; a string or a list of named templates
in ``tokenizer_config.json``) with templates in the styles of Llama 3, ChatML/Qwen, Gemma and
Mistral, conversations, and what transformers rendered for each case with the clock fixed
(``cases.json``), or the error it raised.
"""

import datetime
import json
import shutil
from pathlib import Path

import jinja2.sandbox
import pytest

from texkit.data.tokenizers import GPT2BPETokenizer
from texkit.data.tokenizers.chat_templates import (
    ChatTemplateError,
    ChatTemplateMixin,
    ChatTemplates,
    apply_chat_template,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURE = FIXTURES / "chat_templates"
REFERENCE = json.loads((FIXTURE / "cases.json").read_text("utf-8"))
CONVERSATIONS = json.loads((FIXTURE / "conversations.json").read_text("utf-8"))
NOW = datetime.datetime.fromisoformat(REFERENCE["now"])
USER = [{"role": "user", "content": "Hi"}]


def _case_id(case):
    template = case.get("chat_template")
    shown = "" if template is None else f"-{template[:12]}"
    return f"{case['folder']}-{case['conversation']}{shown}-gen{int(case['add_generation_prompt'])}"


@pytest.fixture(scope="module")
def folders():
    names = {case["folder"] for case in REFERENCE["cases"]}
    return {name: ChatTemplates.from_folder(FIXTURE / name) for name in names}


def _render(templates, case, **extra):
    return templates.render(
        CONVERSATIONS[case["conversation"]],
        add_generation_prompt=case["add_generation_prompt"],
        chat_template=case.get("chat_template"),
        tools=case.get("tools"),
        documents=case.get("documents"),
        special_tokens=REFERENCE["special_tokens"][case["folder"]],
        **case.get("kwargs", {}),
        **extra,
    )


@pytest.mark.parametrize("case", REFERENCE["cases"], ids=_case_id)
def test_renders_as_transformers(folders, case):
    templates = folders[case["folder"]]
    if "error" in case:
        with pytest.raises(ChatTemplateError) as raised:
            _render(templates, case, now=NOW)
        assert raised.value.message == case["error"]  # raise_exception's own message
        return
    assert _render(templates, case, now=NOW) == case["text"]


def test_the_cases_cover_what_they_should():
    cases = REFERENCE["cases"]
    assert {c["folder"] for c in cases} == {
        "llama3", "chatml", "gemma", "mistral", "mistral_config_list"
    }  # fmt: skip
    assert {c["add_generation_prompt"] for c in cases} == {False, True}
    assert sum("error" in c for c in cases) == 4
    # The Llama 3 template printed the fixed date unless given date_string.
    llama = [c for c in cases if c["folder"] == "llama3" and c.get("chat_template") is None]
    dated = [c for c in llama if "kwargs" not in c]
    assert dated and all(NOW.strftime("Today Date: %d %b %Y") in c["text"] for c in dated)
    assert all("Today Date: 01 Jan 2025" in c["text"] for c in llama if "kwargs" in c)


def test_layouts(folders):
    sources = {p.stem: p.read_text("utf-8") for p in (FIXTURE / "sources").glob("*.jinja")}
    assert folders["llama3"].names == ("default",)
    assert folders["llama3"]["default"] == sources["llama3"]
    assert folders["chatml"]["default"] == sources["chatml"]  # a string in tokenizer_config
    assert folders["gemma"].names == ("default",)
    for name in ("mistral", "mistral_config_list"):  # files, and a list in tokenizer_config
        assert set(folders[name].names) == {"default", "tool_use"}
        assert folders[name]["default"] == sources["mistral"]
        assert folders[name]["tool_use"] == sources["mistral_tool_use"]
    unknown_role = [{"role": "moderator", "content": "x"}]
    special = REFERENCE["special_tokens"]["mistral"]
    with pytest.raises(ChatTemplateError) as raised:
        folders["mistral"].render(unknown_role, chat_template="tool_use", special_tokens=special)
    assert raised.value.message == "Unknown role: moderator"
    assert raised.value.where.endswith("additional_chat_templates/tool_use.jinja)")


def test_template_files_come_before_the_config(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "config {{ messages[0].content }}"}), "utf-8"
    )
    assert ChatTemplates.from_folder(tmp_path).render(USER) == "config Hi"
    (tmp_path / "additional_chat_templates").mkdir()
    (tmp_path / "additional_chat_templates" / "short.jinja").write_text("short", "utf-8")
    templates = ChatTemplates.from_folder(tmp_path)
    assert templates.names == ("short",)  # the files only, as transformers reads them
    with pytest.raises(ChatTemplateError, match=r"named chat templates \['short'\] and no 'de"):
        templates.render(USER)
    assert templates.render(USER, chat_template="short") == "short"
    (tmp_path / "chat_template.jinja").write_text("file {{ messages[0].content }}", "utf-8")
    templates = ChatTemplates.from_folder(tmp_path)
    assert templates.render(USER) == "file Hi"
    assert templates.render(USER, tools=[{"type": "function"}]) == "file Hi"  # no tool_use


def test_choosing_a_template(folders):
    mistral = folders["mistral"]
    assert mistral.template() == mistral["default"]
    assert mistral.template(tools=[]) == mistral["tool_use"]  # tools given, even none
    assert mistral.template("tool_use") == mistral["tool_use"]
    given = "{% for m in messages %}{{ m.content | upper }}{% endfor %}"
    assert mistral.render(USER, chat_template=given) == "HI"
    with pytest.raises(ChatTemplateError, match=r"'tool_us' is neither.*\['default', 'tool_use'\]"):
        mistral.render(USER, chat_template="tool_us")
    with pytest.raises(KeyError, match="no chat template 'nope'"):
        mistral["nope"]


def test_a_folder_without_a_template(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist or is a file"):
        ChatTemplates.from_folder(tmp_path / "absent")
    templates = ChatTemplates.from_folder(tmp_path)
    assert len(templates) == 0
    with pytest.raises(ChatTemplateError) as raised:
        templates.render(USER)
    message = str(raised.value)
    assert str(tmp_path) in message
    for looked_for in ("chat_template.jinja", "additional_chat_templates/*.jinja", "tokenizer_"):
        assert looked_for in message
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": null}', "utf-8")
    with pytest.raises(ChatTemplateError, match="has no chat template"):
        ChatTemplates.from_folder(tmp_path).render(USER)
    assert ChatTemplates.from_folder(tmp_path).render(USER, chat_template="{{ 1 }}") == "1"


@pytest.mark.parametrize(
    "value, match",
    [
        (3, "must be a string or a list"),
        ([{"name": "a"}], r"'chat_template'\[0\] must be"),
        ([{"name": "a", "template": "x"}, {"name": "a", "template": "y"}], "'a' twice"),
    ],
)
def test_a_malformed_config_template(tmp_path, value, match):
    path = tmp_path / "tokenizer_config.json"
    path.write_text(json.dumps({"chat_template": value}), "utf-8")
    with pytest.raises(ChatTemplateError, match=match) as raised:
        ChatTemplates.from_folder(tmp_path)
    assert str(path) in str(raised.value)


def test_raise_exception_names_the_template_and_line(folders):
    conversation = CONVERSATIONS["bad_alternation"]
    with pytest.raises(ChatTemplateError) as raised:
        folders["gemma"].render(conversation, special_tokens={"bos_token": "<bos>"})
    source = (FIXTURE / "sources" / "gemma.jinja").read_text("utf-8").splitlines()
    line = next(i for i, text in enumerate(source, 1) if "raise_exception" in text)
    assert raised.value.line == line
    assert "tokenizer_config.json" in raised.value.where
    assert str(raised.value).endswith(f", line {line}: {raised.value.message}")


@pytest.mark.parametrize(
    "template",
    [
        "{{ messages.__class__ }}",
        "{{ ''.__class__.__mro__ }}",
        "{{ messages[0].__class__.__base__.__subclasses__() }}",
        "{{ messages[0] | attr('__class__') }}",
        "{{ messages | map(attribute='__class__') | list }}",
        "{{ '{0.__class__}'.format(messages) }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ lipsum.__globals__ }}",
        "{{ raise_exception.__globals__ }}",
        "{{ messages.append(1) }}",
        "{% if messages.pop %}x{% endif %}",
        "{% set ns = namespace(_x=1) %}",
        "{{ messages.no_such_attribute }}",
        "{{ ''.no_such_attribute }}",
        "{{ undefined_name }}",
        "{% if undefined_name %}x{% endif %}",
        "{% for x in undefined_name %}{% endfor %}",
        "{% include '/etc/hostname' %}",
        "{% import 'x.jinja' as x %}",
        "{% extends ['/etc/hostname'] %}",
    ],
)
def test_a_template_reaches_only_its_data(template):
    messages = [{"role": "user", "content": "Hi"}]
    reason = "line 1: (not allowed in a template: |.*(is undefined|has no attribute))"
    with pytest.raises(ChatTemplateError, match=reason):
        ChatTemplates(template).render(messages)
    assert messages == [{"role": "user", "content": "Hi"}]  # nothing ran on the caller's data


def test_the_sandbox_alone_would_render_internals_as_empty():
    # Why the strict undefined values: jinja2's sandbox makes a forbidden attribute an empty
    # value, so a template probing Python's internals would render on, silently.
    sandbox = jinja2.sandbox.ImmutableSandboxedEnvironment()
    assert sandbox.from_string("[{{ messages.__class__ }}]").render(messages=[]) == "[]"
    with pytest.raises(ChatTemplateError, match="may not reach attribute '__class__'"):
        ChatTemplates("[{{ messages.__class__ }}]").render(USER)


def test_what_templates_test_stays_allowed():
    template = (
        "{% if undefined_name is defined %}x{% endif %}{{ undefined_name | default('d') }}"
        "{% if undefined_name is not none %}n{% endif %}"
    )
    assert ChatTemplates(template).render(USER) == "dn"


@pytest.mark.parametrize(
    "messages, match",
    [
        ([], "messages is empty"),
        ("Hi", "messages must be a list of dicts, got a str"),
        ([("user", "Hi")], r"messages\[0\] is a tuple"),
        ([{"role": "user", "content": Path("x")}], r"messages\[0\]\['content'\] is a \w*Path"),
        ([{"role": "user", "content": [{"text": object()}]}], r"\['content'\]\[0\]\['text'\]"),
    ],
)
def test_data_that_is_not_plain(messages, match):
    with pytest.raises(ChatTemplateError, match=match):
        ChatTemplates("{{ messages }}").render(messages)


def test_other_arguments_are_checked():
    templates = ChatTemplates("{{ messages[0].content }}")
    with pytest.raises(ChatTemplateError, match=r"tools\[0\] is a function: give its JSON schema"):
        templates.render(USER, tools=[len])
    with pytest.raises(ChatTemplateError, match="documents must be a list of dicts"):
        templates.render(USER, documents={"title": "x"})
    with pytest.raises(ChatTemplateError, match="add_generation_prompt must be True or False"):
        templates.render(USER, add_generation_prompt="yes")
    with pytest.raises(ChatTemplateError, match="chat_template must be a template name"):
        templates.render(USER, chat_template=3)


def test_errors_of_the_template_itself():
    with pytest.raises(ChatTemplateError, match=r"line 2: syntax: "):
        ChatTemplates("ok\n{% if %}").render(USER)
    with pytest.raises(ChatTemplateError, match=r"line 3: TypeError: "):
        ChatTemplates("a\n\n{{ 1 + messages[0].content }}").render(USER)
    with pytest.raises(ChatTemplateError, match="recursion too deep"):
        ChatTemplates("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").render(USER)


def test_the_date(folders):
    case = next(c for c in REFERENCE["cases"] if c["folder"] == "llama3" and "text" in c)
    fixed = _render(folders["llama3"], case, now=lambda: NOW)  # a clock
    assert fixed == case["text"]
    other = datetime.datetime(2024, 2, 29)
    assert "Today Date: 29 Feb 2024" in _render(folders["llama3"], case, now=other)
    before = datetime.datetime.now().strftime("%d %b %Y")
    text = _render(folders["llama3"], case)  # the local time
    after = datetime.datetime.now().strftime("%d %b %Y")
    assert f"Today Date: {before}" in text or f"Today Date: {after}" in text


class _ChatBPE(ChatTemplateMixin, GPT2BPETokenizer):
    """A byte-level BPE tokenizer with chat templates, as the tokenizers of LLM folders are."""

    bos_token = "<s>"
    eos_token = "</s>"
    pad_token = "<pad>"
    unk_token = "<unk>"


@pytest.fixture(scope="module")
def chat_tokenizer():
    tokenizer = _ChatBPE.from_pretrained(FIXTURES / "bpe", style="roberta")
    tokenizer.chat_templates = ChatTemplates.from_folder(FIXTURE / "plain")
    return tokenizer


def test_the_mixin_tokenizes_without_special_tokens(chat_tokenizer):
    reference = REFERENCE["ids"]
    conversation = CONVERSATIONS[reference["conversation"]]
    text = chat_tokenizer.apply_chat_template(conversation, add_generation_prompt=True)
    assert text == reference["text"]
    ids = chat_tokenizer.apply_chat_template(
        conversation, add_generation_prompt=True, tokenize=True
    )
    assert ids.numpy().tolist() == reference["ids"]
    packed = chat_tokenizer.encode([text])["input_ids"].numpy()[0]
    assert packed[0] == chat_tokenizer.token_to_id("<s>")  # encode would add them


def test_apply_chat_template_reads_the_tokenizer(chat_tokenizer, tmp_path):
    template = "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}{{ sep_token is defined }}"
    text = apply_chat_template(chat_tokenizer, USER, chat_template=template)
    assert text == "<s>Hi</s>False"
    assert apply_chat_template(chat_tokenizer, USER, chat_template=template, eos_token="!") == (
        "<s>Hi!False"  # a keyword argument overrides a special token
    )

    class _NoTemplates:
        bos_token = 5

    with pytest.raises(ChatTemplateError, match="_NoTemplates.bos_token must be a string"):
        apply_chat_template(_NoTemplates(), USER, chat_template=template)
    _NoTemplates.bos_token = None
    with pytest.raises(ChatTemplateError, match="no chat template: pass chat_template="):
        apply_chat_template(_NoTemplates(), USER)
    shutil.copy(FIXTURE / "plain" / "chat_template.jinja", tmp_path / "chat_template.jinja")
    assert ChatTemplates.from_folder(tmp_path).render(USER) == "User: Hi\n"


# --- the tokenizers of a folder carry its templates ------------------------------------------


def test_a_byte_level_bpe_folder_renders_and_tokenizes_its_template(tmp_path):
    """A Qwen-style ``tokenizer.json`` with the ChatML template in ``tokenizer_config.json``:
    ``tx.pretrained.tokenizer_from_pretrained`` gives a tokenizer whose ``apply_chat_template``
    equals transformers' text, and whose ids keep the template's added tokens whole."""
    import shutil

    import texkit as tx

    for source in (FIXTURES / "tokenizer_json" / "qwen2").iterdir():
        shutil.copy(source, tmp_path)
    config = json.loads((FIXTURE / "chatml" / "tokenizer_config.json").read_text("utf-8"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    tokenizer = tx.pretrained.tokenizer_from_pretrained(tmp_path)
    assert type(tokenizer).__name__ == "ByteLevelBPETokenizer"
    cases = [c for c in REFERENCE["cases"] if c["folder"] == "chatml" and "error" not in c]
    assert cases
    for case in cases:
        messages = CONVERSATIONS[case["conversation"]]
        text = tokenizer.apply_chat_template(
            messages, add_generation_prompt=case["add_generation_prompt"],
            tools=case.get("tools"), documents=case.get("documents"), now=NOW,
            **case.get("kwargs", {}),
        )  # fmt: skip
        assert text == case["text"], case
    ids = tokenizer.apply_chat_template(USER, add_generation_prompt=True, tokenize=True)
    np_ids = ids.numpy().tolist()
    assert np_ids == tokenizer.tokenize(CHATML_USER_PROMPT).numpy().tolist()
    start = tokenizer.tokenize("<|im_start|>").numpy().tolist()
    assert len(start) == 1 and np_ids.count(start[0]) == 2  # the user's turn and the answer's


CHATML_USER_PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_a_folder_without_a_template_renders_nothing(tmp_path):
    import texkit as tx

    folder = FIXTURES / "sentencepiece_byte" / "llama"
    tokenizer = tx.pretrained.tokenizer_from_pretrained(folder)
    with pytest.raises(ChatTemplateError, match="has no chat template"):
        tokenizer.apply_chat_template(USER)
