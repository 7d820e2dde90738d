"""pytest glue over ``migrate.sandbox.testing``: real ZooKeeper and Kafka processes, one cluster per module."""

from __future__ import annotations

import pytest

from migrate.sandbox.testing import running_sandbox, unique_topic


@pytest.fixture(scope="module")
def cluster(request):
    """A module-wide sandbox: 3 ZooKeeper voters, 2 joiners, 3 brokers and 3 spare brokers.

    A module may set ``SANDBOX = dict(...)`` (SandboxSpec fields) to get another shape.
    """
    spec = getattr(request.module, "SANDBOX", None) or dict(
        zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6)
    )
    with running_sandbox(spec) as sandbox:
        yield sandbox


@pytest.fixture
def topic_name(request):
    """A topic name unique to this test."""
    return unique_topic(request.node.name.split("[")[0][:40].replace("_", "-"))
