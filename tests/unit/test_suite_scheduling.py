"""The suite's own scheduling (tests/conftest.py): the order table names real modules, and the modules
that share a sandbox ask the same shape of it."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
INTEGRATION = TESTS / "integration"


def _suite_conftest():
    spec = importlib.util.spec_from_file_location("suite_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assignments(path: Path) -> dict[str, str]:
    """The module-level ``NAME = ...`` of a test module, as source text."""
    text = path.read_text(encoding="utf-8")
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.get_source_segment(text, node.value)
    return out


def test_every_module_in_the_order_table_exists():
    names = {p.name for p in INTEGRATION.glob("test_*.py")}
    assert set(_suite_conftest().MODULE_SECONDS) <= names


def test_the_share_name_is_read_from_the_module_text_and_groups_its_modules():
    conftest = _suite_conftest()
    groups: dict[str, list[Path]] = {}
    for path in sorted(INTEGRATION.glob("test_*.py")):
        name = _assignments(path).get("SHARE_SANDBOX")
        assert conftest._shared_name(path) == (ast.literal_eval(name) if name else None), path.name
        groups.setdefault(conftest._group(path), []).append(path)
    shared = {g: paths for g, paths in groups.items() if len(paths) > 1}
    for group, paths in shared.items():
        assert group.startswith("sandbox "), group
        shapes = {_assignments(p).get("SANDBOX") for p in paths}
        assert len(shapes) == 1, (group, shapes)  # one sandbox: one shape
