"""Issue 7: the canary measures lost / duplicated records and stalls against a real cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from migrate.files import client_settings
from migrate.runner.canary import Canary

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1, 2, 3))


def test_canary_survives_a_killed_broker_without_losing_records(cluster, topic_name):
    run = Canary(client_settings(cluster.bootstrap_servers()), topic=topic_name, rate_per_s=200).start()
    time.sleep(4)
    cluster.kill("kafka-3")
    time.sleep(8)
    report = run.stop()
    cluster.start("kafka-3")
    figures = report.to_dict()
    assert report.sent > 1000, figures
    assert report.acknowledged == report.sent, figures
    assert report.lost == 0 and report.duplicated == 0 and report.out_of_order == 0, figures
    assert report.failed_sends == 0, figures
    assert report.consumed == report.acknowledged, figures
    assert report.latency_p99_ms is not None and report.latency_max_ms >= report.latency_p99_ms, figures
    # Leadership of kafka-3's partition moved: the longest gap without acknowledgement is measured, > 0.
    assert report.longest_stall_s > 0, figures


def test_canary_cli_reports_json(cluster, topic_name):
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "canary", "--bootstrap-server", cluster.bootstrap_servers(),
         "--topic", topic_name, "--duration", "5s", "--rate", "50", "--output", "json"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True and report["lost"] == 0
    assert 150 <= report["sent"] <= 300  # about 5 s at 50 records/s
    assert report["consumed"] == report["acknowledged"] == report["sent"]


def test_canary_bad_duration_is_refused(cluster):
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "canary", "--bootstrap-server", cluster.bootstrap_servers(),
         "--duration", "soon"], capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "--duration 'soon'" in proc.stderr
