"""``--canary-report FILE`` (files.check_live_report): a running canary's report is taken; anything else is
one line saying what is wrong and how to fix it."""

from __future__ import annotations

import json

import pytest

from migrate.core.report.live import live_section
from migrate.core.report.timeline import Timeline
from migrate.errors import BadInput
from migrate.files import check_live_report


def live_doc(written_unix: float, final: bool = False) -> dict:
    t = Timeline(0.0)
    t.on_ack(0.5, 10.0)
    return {"final": final, "sent": 1, "live": live_section(t, written_unix - 1, written_unix)}


def test_a_running_canarys_report_is_read(tmp_path):
    f = tmp_path / "canary.json"
    f.write_text(json.dumps(live_doc(1000.0)))
    assert check_live_report(f, 1002.0, 5.0).buckets[0].acks == 1


@pytest.mark.parametrize("content, now, expected", [
    (None, 1000.0, "does not exist"),
    ("{not json", 1000.0, "is not JSON"),
    (json.dumps(live_doc(1000.0, final=True)), 1000.0, "final report: that canary has stopped"),
    (json.dumps({"final": False, "sent": 3}), 1000.0, "no live section"),
    (json.dumps(live_doc(1000.0)), 1060.0, "last written 60 s ago"),
])
def test_refusals_are_one_line_naming_the_file_and_the_fix(tmp_path, content, now, expected):
    f = tmp_path / "canary.json"
    if content is not None:
        f.write_text(content)
    with pytest.raises(BadInput) as err:
        check_live_report(f, now, 5.0)
    message = err.value.message
    assert expected in message and str(f) in message and "kmigrate canary" in message and "\n" not in message
