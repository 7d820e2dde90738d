"""commands/mirror/render.py: one status shown the same way whichever engine copies; the parts an engine
has (a Connect-based engine's tasks and groups, a consumer group's copy) show where present."""

from __future__ import annotations

import json

import pytest

from migrate.commands.common import OutputFormat
from migrate.commands.mirror import render
from migrate.core.mirror.mm1 import GroupLag
from migrate.core.mirror.status import ConnectState, GroupCopy, GroupOffset, MirrorStatus, PartitionLag


@pytest.fixture
def shown(capsys):
    def show(status, output=OutputFormat.text):
        capsys.readouterr()
        render.status(status, output)
        got = capsys.readouterr()
        return got.out, got.err

    return show


MM2 = MirrorStatus("MirrorMaker 2", ({"running": True, "pid": 7, "state_dir": "/s", "log": "/s/mm2.log"},),
                   (PartitionLag("a", 0, 0, 100, 89, False, 3000), PartitionLag("a", 1, 0, 10, 9)), PartitionLag.COLUMNS,
                   connect=ConnectState({"MirrorSourceConnector": "RUNNING"}, (GroupOffset("g", "a", 0, 50, 40, 38, 38, 12),),
                                        {"a": {"retention.ms": ("1", "2")}}, 12.3, {}))
MM1 = MirrorStatus("MirrorMaker 1", ({"index": 0, "running": True, "pid": 5, "log": "/l0"},
                                     {"index": 1, "running": False, "pid": None, "log": "/l1"}),
                   (GroupLag("a", 0, 5, 0, 10, "c1", "cl1", 1500),), GroupLag.COLUMNS, ("copied twice, maybe",),
                   group_copy=GroupCopy("mirrormaker1", "grp", ({"instance": 1, "pid": 9, "noticed_at": "t"},)))


def test_a_connect_based_engine_shows_its_process_tasks_differences_lag_and_groups(shown):
    out, err = shown(MM2)
    assert out.startswith("MirrorMaker 2: running (pid 7); log /s/mm2.log\ntasks: MirrorSourceConnector RUNNING\n")
    assert "config differs on the target for a: retention.ms=2 (source 1)" in out and "newest heartbeat" in out
    assert "lag 10 records" in out and "mirrored up to" in out and "consumer groups" in out and err == ""


def test_a_consumer_group_copy_shows_its_instances_warnings_and_group(shown):
    out, err = shown(MM1)
    assert out.startswith("MirrorMaker 1 instance 0: running (pid 5); log /l0\nMirrorMaker 1 instance 1: not running; log /l1\n")
    assert "consumer group grp on the source: lag 5 records" in out and "1.5 s" in out and "cl1" in out
    assert "tasks:" not in out and "consumer groups" not in out
    assert err == "warning: copied twice, maybe\n"


def test_each_engine_keeps_its_json_document(shown):
    mm2, _ = shown(MM2, OutputFormat.json)
    assert sorted(json.loads(mm2)) == ["bookkeeping", "caught_up", "config_differences", "groups", "heartbeat_age_s",
                                       "partitions", "process", "tasks", "total_lag", "total_source_records"]
    mm1, _ = shown(MM1, OutputFormat.json)
    doc = json.loads(mm1)
    assert sorted(doc) == ["caught_up", "duplicates_possible", "engine", "group", "instances", "notes", "partitions",
                           "process", "total_lag", "unclean_stops"]
    assert doc["engine"] == "mirrormaker1" and doc["process"] == {"running": True} and doc["duplicates_possible"]
