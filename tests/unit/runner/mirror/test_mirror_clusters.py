"""runner/mirror/clusters.py without clusters: status takes the sides from the flags, else from what start recorded."""

from __future__ import annotations

import pytest

from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.errors import BadInput
from migrate.runner.mirror.clusters import Side, resolve_sides


def test_status_without_a_start_or_flags_says_what_to_give(tmp_path):
    with pytest.raises(BadInput, match="--source-bootstrap and --target-bootstrap"):
        resolve_sides(tmp_path, None, None)
    mm = MirrorMakerProcess(tmp_path)
    mm.write_state({"source_bootstrap": "a:9092", "target_bootstrap": "b:9092", "source_command_config": None,
                    "target_command_config": "/x.properties", "topics": {"t": 3}, "groups": "g.*"})
    source, target, topics, groups = resolve_sides(tmp_path, None, Side("c:9092", None, "target"))
    assert (source, target, topics, groups) == (Side("a:9092"), Side("c:9092", None, "target"), {"t": 3}, "g.*")


def test_a_missing_command_config_names_the_side_s_flag(tmp_path):
    missing = str(tmp_path / "client.properties")
    with pytest.raises(BadInput, match="--target-command-config .*: no such file"):
        Side("b:9092", missing, "target").settings()
    with pytest.raises(BadInput, match="--source-command-config .*: no such file"):
        Side("a:9092", missing, "source").java_properties()
