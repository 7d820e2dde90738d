"""The mirror engines by name: the one place an engine's name picks its implementation, whether the
name comes from ``--engine`` or from the ``mirror.json`` that ``mirror start`` wrote in its state
directory (see ``runner/mirror/engine.py`` for what an engine does).
"""

from __future__ import annotations

from pathlib import Path

from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess, default_state_dir  # noqa: F401 (default_state_dir: for commands)
from migrate.errors import BadInput
from migrate.runner.mirror.clusters import Request
from migrate.runner.mirror.engine import Engine, Outcome
from migrate.runner.mirror.mm1 import MirrorMaker1
from migrate.runner.mirror.mm2 import MirrorMaker2

DEFAULT = MirrorMaker2()
ENGINES: dict[str, Engine] = {e.name: e for e in (DEFAULT, MirrorMaker1())}


def engine_named(name: str) -> Engine:
    """The engine ``--engine`` names (BadInput for another name)."""
    engine = ENGINES.get(name)
    if engine is None:
        raise BadInput(f"--engine {name}: choose mirrormaker2 (the default) or mirrormaker1")
    return engine


def engine_of(state_dir: Path) -> Engine:
    """The engine ``mirror start`` recorded in ``state_dir``'s ``mirror.json`` (MirrorMaker 2 when it
    records none: MirrorMaker 2's start writes no name)."""
    state = MirrorMakerProcess(state_dir).read_state() or {}
    return ENGINES.get(state.get("engine") or DEFAULT.name, DEFAULT)


def start(engine: Engine, req: Request, state_dir: Path, *, heap_mb: int, tasks: int = 2, instances: int = 1) -> Outcome:
    """``mirror start`` with ``engine``: its options checked, refused while another engine runs from
    ``state_dir`` (it would be left unmanaged), then started."""
    engine.check_options(instances=instances)
    for other in ENGINES.values():
        if other is not engine:
            other.refuse_if_running(state_dir)
    return engine.start(req, state_dir, heap_mb=heap_mb, tasks=tasks, instances=instances)
