"""``kmigrate demo --kraft-cluster`` without servers: the sandbox it asks for, its phases in the operator's order, the
report's verdict, and the command's refusals (one line, exit 2, nothing started)."""

from __future__ import annotations

import pytest

from migrate.core.canary import CanaryReport
from migrate.errors import BadInput, StepFailed
from migrate.sandbox.demo_kraft_cluster import KraftClusterDemo, KraftClusterReport


def test_the_sandbox_is_kraft_with_spare_controllers_and_brokers(tmp_path):
    demo = KraftClusterDemo(tmp_path / "d", ip_prefix="127.0.77")
    spec = demo.spec
    assert spec.kraft and spec.zookeeper_ids == () and spec.kafka_version == "4.4.0"
    assert (spec.controller_ids, spec.spare_controller_ids) == ((3000, 3001, 3002), (3003, 3004, 3005))
    assert (demo.old, demo.new) == ([1, 2, 3], [4, 5, 6])
    assert spec.kafka_settings == {"replica.fetch.backoff.ms": "100", "replica.fetch.wait.max.ms": "100"}
    assert {rf for _n, _p, rf, *_ in demo.topic_shapes} == {3}
    assert any(c.get("cleanup.policy") == "compact" for *_, c, _n in demo.topic_shapes)
    small = KraftClusterDemo(tmp_path / "s", ip_prefix="127.0.77", brokers=2, kafka_version="4.1.1")
    assert (small.old, small.new, small.spec.kafka_version) == ([1, 2], [3, 4], "4.1.1")
    assert {rf for _n, _p, rf, *_ in small.topic_shapes} == {2}


def test_the_phases_in_the_operators_order(tmp_path):
    names = [n for n, _ in KraftClusterDemo(tmp_path / "d").phase_list()]
    order = ["start the canary", "kmigrate verify snapshot", "roll every broker to the old and new controllers",
             "kmigrate controllers", "roll the brokers that stay to the new controllers only", "kmigrate partitions",
             "stop the old brokers", "kmigrate brokers unregister", "kmigrate verify compare",
             "read group offsets and topic configs (after) and compare"]
    found = [next(i for i, n in enumerate(names) if n.startswith(o)) for o in order]
    assert found == sorted(found), names


@pytest.mark.parametrize("version", ["3.9.2", "4.9.0", "x"])
def test_a_release_before_kafka_4_or_unknown_is_refused(tmp_path, version):
    with pytest.raises(BadInput):
        KraftClusterDemo(tmp_path / "d", kafka_version=version)


def _done(report: KraftClusterReport) -> KraftClusterReport:
    report.canary = CanaryReport(topic="c", final=True, duration_s=10.0, sent=10, acknowledged=10, consumed=10,
                                 not_yet_consumed=0, overdue=0, lost=0, unacknowledged=0, duplicated=0, out_of_order=0,
                                 failed_sends=0, latency_p50_ms=5.0, latency_p99_ms=20.0, latency_max_ms=30.0,
                                 produce_stall_s=0.4, produce_stall_at_s=3.0, produce_stall_partition=0,
                                 consume_stall_s=0.4, consume_stall_at_s=3.0, consume_stall_partition=0)
    report.verify = {"ok": True}
    report.state_compared = True
    report.voters_after = [3005, 3003, 3004]
    report.registrations_after = {4: False, 5: False, 6: False}
    return report


def test_the_report_is_ok_only_with_every_outcome(tmp_path):
    report = _done(KraftClusterDemo(tmp_path / "d").report)
    assert report.ok and report.to_dict()["no_stale_registration"] is True
    for spoil in (lambda r: setattr(r, "voters_after", [3000, 3003, 3004]),
                  lambda r: setattr(r, "registrations_after", {1: True, 4: False, 5: False, 6: False}),
                  lambda r: setattr(r, "old_nodes_running", ["controller-3001"]),
                  lambda r: setattr(r, "state_differences", ["group g t/0: committed offset 5 before, 4 after"]),
                  lambda r: setattr(r, "verify", {"ok": False})):
        r = _done(KraftClusterDemo(tmp_path / "d").report)
        spoil(r)
        assert not r.ok and r.to_dict()["ok"] is False


def test_a_failed_step_ends_the_run_and_names_it(tmp_path):
    demo = KraftClusterDemo(tmp_path / "d")
    demo.start_sandbox = lambda: "started"

    def refused():
        raise StepFailed("kmigrate controllers failed (exit 1): controller 3003 did not catch up")

    demo.create_topics = refused
    demo.start_canary = lambda: pytest.fail("a phase after the failed one ran")
    report = demo.run()
    assert report.failed == ["create topics, transactions and consumer groups: kmigrate controllers failed (exit 1): "
                             "controller 3003 did not catch up"]
    assert report.to_dict()["ok"] is False


def _demo(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "migrate", "demo", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args, says", [
    (["--kraft"], "--kraft-cluster and --kraft are two different demos"),
    (["--cross-cluster"], "--kraft-cluster and --cross-cluster are two different demos"),
    (["--no-move"], "--no-move is a variant of --kraft"),
    (["--security", "sasl_ssl"], "plaintext sandbox only"),
    (["--kafka-version", "3.9.2"], "runs Kafka 4.x"),
])
def test_refusals_are_one_line_exit_2(args, says, tmp_path):
    r = _demo("--kraft-cluster", "--dir", str(tmp_path / "d"), *args)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and says in lines[0], r.stderr
    assert not (tmp_path / "d").exists()


def test_kafka_version_without_kraft_cluster_is_refused(tmp_path):
    r = _demo("--kafka-version", "4.1.1", "--dir", str(tmp_path / "d"))
    assert r.returncode == 2 and "--kafka-version is for --kraft-cluster" in r.stderr, r.stderr
