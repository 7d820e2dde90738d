"""Issue 31: the client impact page is one file that needs no network: plotly.js inlined, the phase table in it.

That chromium draws it is tested on a real canary run (tests/integration/test_canary.py) and demo (test_demo_kraft.py).
"""

from __future__ import annotations

import re

from migrate.core.report.impact import Impact
from migrate.core.report.phases import AT_REST, Mark
from migrate.core.report.timeline import Timeline
from migrate.runner.report.html import figure, page, write_page


def _impact(throttle=None) -> Impact:
    t = Timeline(started_s=0.0)
    for i in range(200):
        t.on_ack(i / 10, 12.0 if i < 100 else 250.0)
    t.on_stall(11.0, 13.2)
    return Impact.of("kmigrate canary on c & d", t, [Mark(AT_REST, 0, 10), Mark("kmigrate partitions (run r1)", 10, 20)],
                     throttle=throttle or {}, notes=("the bookkeeping topic <x> could not be read",))


def test_the_page_is_self_contained_with_the_phase_table_and_the_notes_escaped(tmp_path):
    path = tmp_path / "r.html"
    write_page(_impact(), path)
    text = path.read_text()
    assert not re.search(r"<script[^>]+src=", text) and "cdn.plot.ly" not in text.split("<script>/**")[0]
    assert len(text) > 1_000_000  # plotly.js itself
    assert "<td>at rest</td>" in text and "<td>kmigrate partitions (run r1)</td>" in text
    assert "c &amp; d" in text and "&lt;x&gt;" in text  # the notes and the title escaped
    assert not list(tmp_path.glob("*.tmp"))


def test_the_figure_has_a_trace_per_series_and_a_band_per_phase_the_throttle_when_known():
    fig = figure(_impact())
    assert [t.name for t in fig.data] == ["latency p50", "latency p99", "latency max", "acks/s", "stall (s)"]
    assert [a.text for a in fig.layout.annotations if a.text in (AT_REST, "kmigrate partitions (run r1)")] == [
        AT_REST, "kmigrate partitions (run r1)"]
    assert len(fig.layout.shapes) == 2 * 3  # each band over each of the 3 charts
    fig = figure(_impact(throttle={4: [(0.0, 10_000_000), (15.0, None)]}))
    assert fig.data[-1].name == "throttle broker 4" and list(fig.data[-1].y) == [10.0, None, None]
    assert list(fig.data[3].y)[:2] == [10.0, 10.0]  # acks per second


def test_the_page_of_a_run_with_no_ack_still_renders():
    assert "<table>" in page(Impact.of("empty", Timeline(started_s=0.0), []))
