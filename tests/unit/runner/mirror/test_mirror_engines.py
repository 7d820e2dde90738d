"""runner/mirror/engines.py and engine.py without clusters: the engine picked by its name (from --engine
or mirror.json), and the one wait both engines share."""

from __future__ import annotations

import pytest

from migrate.adapters.mirrormaker.mm2 import MirrorMakerProcess
from migrate.core.mirror.status import MirrorStatus, PartitionLag
from migrate.errors import BadInput
from migrate.runner.mirror.engines import ENGINES, engine_named, engine_of
from migrate.runner.mirror.mm1 import MirrorMaker1
from migrate.runner.mirror.mm2 import MirrorMaker2


def test_an_engine_is_picked_by_the_name_given_or_recorded(tmp_path):
    assert sorted(ENGINES) == ["mirrormaker1", "mirrormaker2"]
    assert isinstance(engine_named("mirrormaker1"), MirrorMaker1) and isinstance(engine_named("mirrormaker2"), MirrorMaker2)
    with pytest.raises(BadInput, match=r"--engine mm3: choose mirrormaker2 \(the default\) or mirrormaker1"):
        engine_named("mm3")
    assert engine_of(tmp_path) is engine_named("mirrormaker2"), "nothing recorded: MirrorMaker 2"
    MirrorMakerProcess(tmp_path).write_state({"engine": "mirrormaker1"})
    assert engine_of(tmp_path) is engine_named("mirrormaker1")
    MirrorMakerProcess(tmp_path).write_state({"source_bootstrap": "a:9092"})  # MirrorMaker 2's start records no name
    assert engine_of(tmp_path) is engine_named("mirrormaker2")


def _status(lag: int, complete: bool) -> MirrorStatus:
    return MirrorStatus("X", ({"running": True, "pid": 1, "log": "l"},), (PartitionLag("t", 0, 0, 10, 9 - lag),),
                        PartitionLag.COLUMNS, complete=complete)


class _Looks(MirrorMaker2):
    """An engine whose looks are given (no cluster is reached: the clusters open on first use)."""

    def __init__(self, quick: list[MirrorStatus], whole: MirrorStatus):
        self.quick, self.whole, self.looks = quick, whole, []

    def read_status(self, mirror, topic_re, quick=False):
        self.looks.append(quick)
        return self.quick.pop(0) if quick else self.whole


@pytest.fixture
def started(tmp_path):
    MirrorMakerProcess(tmp_path).write_state({"source_bootstrap": "a:9092", "target_bootstrap": "b:9092"})
    return tmp_path


def test_a_wait_looks_quickly_until_caught_up_then_completes_its_last_look(started):
    engine = _Looks([_status(3, False), _status(0, False)], _status(0, True))
    seen = []
    caught_up, last = engine.wait_caught_up(started, None, None, None, 5.0, interval_s=0.01, on_status=seen.append)
    assert caught_up and last is engine.whole and engine.looks == [True, True, False]
    assert [s.total_lag for s in seen] == [3, 0]


def test_a_complete_quick_look_is_the_last_status_and_a_timeout_still_gives_one(started):
    done = _status(0, True)
    engine = _Looks([done], _status(5, True))
    assert engine.wait_caught_up(started, None, None, None, 5.0, interval_s=0.01) == (True, done)
    assert engine.looks == [True]
    engine = _Looks([_status(2, True)] * 100, _status(2, True))
    caught_up, last = engine.wait_caught_up(started, None, None, None, 0.05, interval_s=0.01)
    assert not caught_up and last is engine.whole and engine.looks[-1] is False
