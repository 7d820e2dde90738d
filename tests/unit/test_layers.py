"""The layers of ``migrate/``, enforced: who may import whom, and how long a runner function may be.

- ``core/`` is pure: it imports nothing of kmigrate outside ``core/`` and ``errors``, no client
  library, no clock, no process or socket module, and opens no file.
- ``commands/`` never imports ``adapters/`` (a command calls a runner function).
- Only ``adapters/`` import kazoo, confluent_kafka, kafka-python (``kafka``) and pyspark.
- ``core/``, ``adapters/`` and ``runner/`` never import ``sandbox/`` or ``commands/``;
  ``core/`` and ``adapters/`` never import ``runner/`` (an adapter waits with the one wait helper,
  ``migrate/waiting.py``, which sits below every layer).
- No function in ``runner/`` is longer than ``MAX_RUNNER_FUNCTION_LINES``.

The checker reads source with ``ast`` (imports inside functions count too). The last tests feed it
a small package that breaks each rule, to show that every rule can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "migrate"
CLIENT_LIBRARIES = ("kazoo", "confluent_kafka", "kafka", "pyspark")
CORE_FORBIDDEN_STDLIB = ("time", "socket", "subprocess", "threading", "signal", "urllib", "http", "fcntl")
MAX_RUNNER_FUNCTION_LINES = 80


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, imported module) for every import in ``tree``, relative ones resolved against ``module``."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([base] if base else []))
            if base.count(".") <= 1 and base.split(".")[0] == module.split(".")[0]:
                # ``from migrate import adapters``, ``from migrate.runner import waiting``: the names are modules
                out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, base))
    return out


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "top"


def _top(name: str) -> str:
    return name.split(".")[0]


def violations(package: Path) -> list[str]:
    """Every broken layer rule in the package at ``package`` (a folder named like ``migrate``)."""
    found: list[str] = []
    root = package.name
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        layer = _layer(module)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = f"{rel.as_posix()}.py"
        for line, name in _imports(tree, module):
            top = _top(name)
            own = top == root
            sub = name.split(".")[1] if own and "." in name else ""
            if top in CLIENT_LIBRARIES and layer != "adapters":
                found.append(f"{where}:{line}: imports {name}; only {root}/adapters/ may import {top}")
            if layer == "core":
                if own and sub not in ("core", "errors"):
                    found.append(f"{where}:{line}: core imports {name}; core may import only {root}.core and {root}.errors")
                if top in CORE_FORBIDDEN_STDLIB:
                    found.append(f"{where}:{line}: core imports {name}; core does no I/O and reads no clock")
            if layer == "commands" and own and sub == "adapters":
                found.append(f"{where}:{line}: a command imports {name}; commands call runner/, never adapters/")
            if layer in ("core", "adapters", "runner") and own and sub in ("sandbox", "commands"):
                found.append(f"{where}:{line}: {layer} imports {name}; nothing below the commands uses {sub}/")
            if layer in ("core", "adapters") and own and sub == "runner":
                found.append(f"{where}:{line}: {layer} imports {name}; only commands and sandbox use runner/")
        for node in ast.walk(tree):
            if layer == "core" and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                found.append(f"{where}:{node.lineno}: core opens a file; core gets text, its caller reads the file")
            if layer == "runner" and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_RUNNER_FUNCTION_LINES:
                    found.append(f"{where}:{node.lineno}: {node.name} is {length} lines; a runner function has at most "
                                 f"{MAX_RUNNER_FUNCTION_LINES}")
    return found


def test_the_package_keeps_its_layers():
    assert violations(PACKAGE) == []


# ---------------------------------------------------------------- the checker fails when a rule is broken

BROKEN = {
    "core/model.py": "import time\nfrom migrate.adapters import kafka\n\ndef read(p):\n    return open(p).read()\n",
    "core/units.py": "from migrate.errors import BadInput\nfrom . import model\n",
    "commands/plan.py": "def run():\n    from migrate.adapters.kafka.client import admin_client\n",
    "runner/inspect.py": "from kazoo.client import KazooClient\nfrom migrate.sandbox import Sandbox\n",
    "runner/long.py": "def long():\n" + "    x = 1\n" * 90,
    "sandbox/cluster.py": "def up():\n    from confluent_kafka.admin import AdminClient\n",
    "adapters/kafka.py": "import confluent_kafka\nfrom migrate import waiting\nfrom migrate.runner.events import crash_point\n",
}


@pytest.fixture
def broken_package(tmp_path):
    pkg = tmp_path / "migrate"
    for rel, text in BROKEN.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text)
    (pkg / "__init__.py").touch()
    return pkg


def test_every_rule_catches_a_break(broken_package):
    found = "\n".join(violations(broken_package))
    expected = [
        "migrate/core/model.py:1: core imports time",
        "migrate/core/model.py:2: core imports migrate.adapters",
        "migrate/core/model.py:5: core opens a file",
        "migrate/commands/plan.py:2: a command imports migrate.adapters.kafka.client",
        "migrate/runner/inspect.py:1: imports kazoo.client; only migrate/adapters/ may import kazoo",
        "migrate/runner/inspect.py:2: runner imports migrate.sandbox",
        "migrate/runner/long.py:1: long is 91 lines",
        "migrate/sandbox/cluster.py:2: imports confluent_kafka.admin; only migrate/adapters/ may import confluent_kafka",
        "migrate/adapters/kafka.py:3: adapters imports migrate.runner.events",
    ]
    for line in expected:
        assert line in found, f"not caught: {line}\n{found}"
    assert "core/units.py" not in found  # core importing core and errors is allowed
    assert "adapters/kafka.py:1" not in found  # an adapter may import a client library
    assert "adapters/kafka.py:2" not in found  # ... and wait with migrate/waiting
