"""Issue 17: ``kmigrate demo --cross-cluster`` on two real sandbox clusters with a real MirrorMaker 2 and
Spark verify: the canary's producer and consumer group switched from source to target by ``mirror
cutover``: none of its acknowledged records lost, the cross-cluster verify passed, and the duplicates
the canary read equal to what cutover reported for its group. Small scale (a few hundred records).
"""

from __future__ import annotations

import random

import pytest

from migrate.sandbox.demo_cross import CANARY_GROUP, CrossClusterDemo
from migrate.sandbox.testing import free_ip_prefix

pytestmark = pytest.mark.integration


def two_free_prefixes() -> str:
    """A prefix with the next one free too (the target cluster's)."""
    rng = random.Random()
    while True:
        prefix = free_ip_prefix(2, rng)
        a, b, c = prefix.split(".")
        if int(c) < 254 and _free(f"{a}.{b}.{int(c) + 1}"):
            return prefix


def _free(prefix: str) -> bool:
    from migrate.sandbox.testing import PORTS, port_free
    return all(port_free(f"{prefix}.{i}", p) for i in (1, 2) for p in PORTS)


def test_demo_cross_cluster_switches_the_canary_losing_nothing(tmp_path):
    demo = CrossClusterDemo(tmp_path / "demo", ip_prefix=two_free_prefixes(), records_scale=0.03,
                            canary_rate=50, canary_after_s=3)
    try:
        report = demo.run()
    finally:
        demo.teardown()
    doc = report.to_dict()
    print("phases:", [(p["name"], p["seconds"]) for p in doc["phases"]])  # in the junit report: where the time went
    names = [p["name"] for p in doc["phases"]]
    assert names[-1] == "kmigrate mirror stop" and any("cutover" in n for n in names), names
    canary = report.canary
    assert canary is not None and canary.final
    assert canary.lost == 0 and canary.failed_sends == 0, doc["canary"]
    assert canary.sent > 100 and canary.consumed >= canary.acknowledged, doc["canary"]
    assert report.cutover.get("ok") and report.verify["ok"], doc["cutover"]
    assert all(g["passed"] for g in report.cutover["gates"]), report.cutover["gates"]
    group_offsets = [t for t in report.cutover["offsets"] if t["group"] == CANARY_GROUP]
    assert group_offsets and all(t["target_offset"] is not None for t in group_offsets), group_offsets
    # what the switch cost, as cutover reported it, is what the canary's group read again
    assert canary.duplicated == report.cutover_duplicates, (canary.duplicated, group_offsets)
    # the copy proven before the switch (mirror verify, the canary writing): the cut-over verified only the tail,
    # without Spark; the switch as the canary felt it, measured and at least the cut-over's own time
    switch = doc["switch"]
    assert doc["cutover"]["verify"]["how"] == "tail" and switch["proven_before"] > 0, (doc["cutover"]["verify"], switch)
    assert switch["verified_at_switch"] > 0, switch  # the canary's records written after the proofs
    assert switch["clients_stopped_s"] is not None and switch["clients_stopped_s"] >= switch["cutover_s"], switch
    print("switch:", switch)
    assert "the switch: the canary's producer stopped" in report.switch_line()
    assert report.ok
