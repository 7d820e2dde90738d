"""runner/mirror without clusters: status takes the sides from the flags, else from what start recorded."""

from __future__ import annotations

import pytest

from migrate.adapters.mirrormaker import MirrorMakerProcess
from migrate.errors import BadInput
from migrate.runner.mirror import Side, resolve_sides


def test_status_without_a_start_or_flags_says_what_to_give(tmp_path):
    with pytest.raises(BadInput, match="--source-bootstrap and --target-bootstrap"):
        resolve_sides(tmp_path, None, None)
    mm = MirrorMakerProcess(tmp_path)
    mm.write_state({"source_bootstrap": "a:9092", "target_bootstrap": "b:9092", "source_command_config": None,
                    "target_command_config": "/x.properties", "topics": {"t": 3}, "groups": "g.*"})
    source, target, topics, groups = resolve_sides(tmp_path, None, Side("c:9092"))
    assert (source, target, topics, groups) == (Side("a:9092"), Side("c:9092"), {"t": 3}, "g.*")
