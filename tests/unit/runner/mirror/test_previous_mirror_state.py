"""``mirror.json`` as the release before the mirror room (f6280a4) wrote it is read by this one: the engine it
names (MirrorMaker 1) or leaves unnamed (MirrorMaker 2), both sides, the topics and the groups filter.

The two documents are the exact text that release's ``MirrorMakerProcess.write_state`` wrote (``sort_keys``,
indent 2) for the keys its ``runner/mirror.py`` and ``runner/mirror1.py`` passed; do not regenerate them."""

from __future__ import annotations

from migrate.runner.mirror.clusters import resolve_sides
from migrate.runner.mirror.engines import engine_named, engine_of

PREVIOUS_MM2 = """{
  "groups": "orders-.*",
  "source_bootstrap": "10.1.0.1:9092,10.1.0.2:9092",
  "source_command_config": "/etc/kafka/source.properties",
  "target_bootstrap": "10.2.0.1:9093",
  "target_command_config": null,
  "topics": {
    "orders": 12,
    "payments": 3
  }
}
"""

PREVIOUS_MM1 = """{
  "engine": "mirrormaker1",
  "group": "kmigrate-mirrormaker1",
  "groups": ".*",
  "include": "orders|payments",
  "instances": 2,
  "source_bootstrap": "10.1.0.1:9092",
  "source_command_config": null,
  "target_bootstrap": "10.2.0.1:9093",
  "target_command_config": "/etc/kafka/target.properties",
  "topics": {
    "orders": 12,
    "payments": 3
  },
  "unclean_stops": [
    {
      "instance": 1,
      "noticed_at": "2026-11-20T10:00:00Z",
      "pid": 4242
    }
  ]
}
"""


def test_a_mirrormaker2_state_of_the_previous_release_is_read(tmp_path):
    (tmp_path / "mirror.json").write_text(PREVIOUS_MM2, encoding="utf-8")
    assert engine_of(tmp_path) is engine_named("mirrormaker2")
    source, target, topics, groups = resolve_sides(tmp_path, None, None)
    assert (source.bootstrap, source.command_config) == ("10.1.0.1:9092,10.1.0.2:9092", "/etc/kafka/source.properties")
    assert (target.bootstrap, target.command_config) == ("10.2.0.1:9093", None)
    assert topics == {"orders": 12, "payments": 3} and groups == "orders-.*"


def test_a_mirrormaker1_state_of_the_previous_release_is_read(tmp_path):
    (tmp_path / "mirror.json").write_text(PREVIOUS_MM1, encoding="utf-8")
    assert engine_of(tmp_path) is engine_named("mirrormaker1")
    source, target, topics, groups = resolve_sides(tmp_path, None, None)
    assert (source.bootstrap, target.bootstrap, target.command_config) == (
        "10.1.0.1:9092", "10.2.0.1:9093", "/etc/kafka/target.properties")
    assert topics == {"orders": 12, "payments": 3} and groups == ".*"
