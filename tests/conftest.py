"""pytest glue over ``migrate.sandbox.testing``: real ZooKeeper and Kafka processes, one cluster per module.

Under pytest-xdist (``-n N --dist loadfile``) each module runs whole on one worker (its module-wide
cluster is built once), each worker draws its clusters' loopback prefixes from its own slice of
127.0.0.0/8 (``migrate.sandbox.testing.worker_octets``), and the heaviest modules start first.
"""

from __future__ import annotations

import pytest

from migrate.sandbox.testing import running_sandbox, unique_topic

# Seconds each integration module takes alone on the 2-core machine (the lead's baseline of the whole
# suite, one worker). Only the order matters: pytest-xdist's loadfile hands modules out in collection
# order, so the longest go first and the run does not end with one worker busy alone on a long module.
# An integration module not listed counts as 30 s, a unit module as 0 s: the unit tests fill the end.
MODULE_SECONDS = {
    "test_end_to_end.py": 600,
    "test_versions.py": 500,
    "test_mirror1.py": 240,
    "test_readme_runbook.py": 200,
    "test_demo_security.py": 150,
    "test_demo_cross_cluster.py": 133,
    "test_verify_standalone.py": 120,
    "test_mirror_security.py": 100,
    "test_mirror_cutover.py": 96,
}


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture: a module's tests keep their order
def pytest_collection_modifyitems(session, config, items):
    """The heaviest modules first (:data:`MODULE_SECONDS`); the order within a module is kept."""
    position = {id(item): i for i, item in enumerate(items)}

    def seconds(item) -> int:
        return MODULE_SECONDS.get(item.path.name, 30 if "integration" in item.path.parts else 0)

    items.sort(key=lambda item: (-seconds(item), position[id(item)]))


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
