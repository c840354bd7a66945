"""Files and functions of texkit stay concept-sized (DESIGN section 2).

A module file past :data:`MAX_FILE_LINES` lines, or a function past :data:`MAX_FUNCTION_LINES`
(counted from its ``def`` to its last line, docstring included), says why in its docstring: a
sentence with "lines because" (e.g. "It runs over 450 lines because ..."). Anything else fails
here, naming the file or function and its length, so that a split is made when a file grows
instead of in a later clean-up.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "texkit"
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 80
_REASON = "lines because"


def _sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def _says_why(node: ast.AST) -> bool:
    return _REASON in (ast.get_docstring(node) or "")


@pytest.mark.parametrize("path", _sources(), ids=lambda path: str(path.relative_to(ROOT)))
def test_files_and_functions_are_concept_sized(path):
    source = path.read_text("utf-8")
    tree = ast.parse(source)
    problems = []
    lines = source.count("\n")
    if lines > MAX_FILE_LINES and not _says_why(tree):
        problems.append(f"the file has {lines} lines (more than {MAX_FILE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES and not _says_why(node):
                problems.append(
                    f"{node.name} (line {node.lineno}) has {length} lines "
                    f"(more than {MAX_FUNCTION_LINES})"
                )
    assert not problems, (
        f"texkit/{path.relative_to(ROOT)}: " + "; ".join(problems) + f"; split it, or say why in "
        f"its docstring with a sentence containing {_REASON!r}"
    )


def test_the_rule_sees_long_functions():
    # The counting itself, on a made-up file: 81 lines from def to the end is too long.
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    tree = ast.parse(f"def f():\n{body}\n")
    function = tree.body[0]
    assert function.end_lineno - function.lineno + 1 == 81
    assert not _says_why(function)
    why = ast.parse(f'def f():\n    """It runs 82 lines because of X."""\n{body}\n').body[0]
    assert _says_why(why)
