"""pytest glue over ``migrate.sandbox.testing``: real ZooKeeper and Kafka processes, one cluster per module.

Under pytest-xdist (``-n N --dist loadfile``) each module runs whole on one worker (its module-wide
cluster is built once), together with the modules it shares a sandbox with (``SHARE_SANDBOX``); each
worker draws its clusters' loopback prefixes from its own slice of 127.0.0.0/8
(``migrate.sandbox.testing.worker_octets``); the heaviest modules start first.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from migrate.sandbox.testing import running_sandbox, unique_topic

# About how many seconds each integration module takes (2 cores): only the order matters. pytest-xdist
# hands the units out in collection order, so the longest go first and the run does not end with one
# worker busy alone on a long module. Measured on a quiet machine with three workers (a clean-clone
# .ci/run, session 2 of issue 28: each figure is the module's setup, calls and teardown on a busy worker).
# An integration module not listed counts as 30 s, a unit module as 0 s: the unit tests fill the end.
MODULE_SECONDS = {
    "test_zookeeper_not_serving.py": 100,  # a reconfig whose new voters serve no client, run twice: 99 s alone through itest
    "test_partitions_autothrottle.py": 52,  # issue 31, 1 ZooKeeper, 2 + 2 brokers, 24 MB, a kill and a resume: 45-55 s alone through itest
    "test_controllers.py": 115,  # issue 30, alone through itest (2026-11-27)
    "test_controllers_static.py": 65,  # Kafka 4.1.2 static quorum, 3 voters + 1 spare, 1 broker: 60-63 s alone through itest (kraft-static)
    "test_controllers_kill.py": 60,  # issue 30, 4.4.0, 5 controllers + 1 broker, seeded kills: 48-73 s through itest (load 2-8)
    "test_kraft_secured.py": 67,  # issue 30, 4.4.0 sasl_ssl, 2 controllers + 2 brokers: 61-67 s alone through itest (load 2-4, 2026-11-27)
    "test_kraft.py": 170,  # the KRaft modules from their authors' runs
    "test_kraft_precheck.py": 40,
    "test_demo_kraft.py": 192,  # --no-move, alone through itest at load ~6 (demo-lite, 2026-11-26)
    "test_demo_kraft_cluster.py": 160,  # issue 30, Kafka 4.4.0, 1+1 controllers, 2+2 brokers (--controllers 1 --brokers 2): 158 s alone through itest, quiet
    "test_kraft_controller_security.py": 15,
    "test_controller_voters.py": 15,  # 3 controllers of 3.9.2 (2 dynamic, 1 static), no broker: 12-15 s alone through itest
    "test_readme_runbook.py": 300,  # 2 + 2 brokers since session 43: 100 s alone through itest (122 s with 3 + 3)
    "test_security.py": 390,  # with test_verify_standalone's check (merged)
    "test_end_to_end.py": 400,  # with test_demo_security's SASL_SSL (merged): to be measured
    "test_versions.py": 331,
    "test_verify.py": 212,
    "test_mirror1.py": 189,
    "test_partitions_migration.py": 162,
    "test_partitions_interrupt.py": 143,
    "test_security_acl.py": 134,
    "test_mirror_cutover.py": 130,  # 3 groups, 8 tests (mirror verify, the tail at the switch, Python = Spark hashes: one JVM): 113-144 s through itest (two runs, mirror-tail, 2026-11-27)
    "test_demo_cross_cluster.py": 125,
    "test_mirror_security.py": 120,
    "test_mirror.py": 119,
    "test_mirror_kraft.py": 55,  # 3.9 ZooKeeper -> 4.4 KRaft, 3 tests: 50-58 s alone through itest (mirror-kraft, 2026-11-27)
    "test_partitions_stall.py": 118,
    "test_partitions_resume.py": 118,
    "test_verify_clusters.py": 101,
    "test_sandbox.py": 98,
    "test_zookeeper_refusals.py": 87,
    "test_plan.py": 81,
    "test_verify_retention.py": 56,
    "test_canary.py": 55,
    "test_sandbox_lifecycle.py": 45,
    "test_brokers_unregister.py": 65,  # Kafka 4.4.0, 2 controllers, 2 brokers + 1 spare, verify: 62 s alone through itest
    "test_sandbox_kraft.py": 75,  # 3.9.2 dynamic (2 controllers moved, stop first) + 4.4.0 static (made dynamic and moved): 60-87 s alone through itest at load 4-12 (controllers-39)
    "test_zookeeper_sizes.py": 42,
    "test_mirror_connect.py": 41,
    "test_zookeeper_reconfig.py": 31,
    "test_zookeeper_resume.py": 20,
    "test_zookeeper_auth.py": 19,
    "test_canary_resume.py": 12,
    "test_testcontainers_backend.py": 0,
}

DEFAULT_SANDBOX = dict(zookeeper_ids=(1, 2, 3), spare_zookeeper_ids=(4, 5), broker_ids=(1, 2, 3), spare_broker_ids=(4, 5, 6))
_SHARE_LINE = re.compile(r"""^SHARE_SANDBOX = ["']([\w-]+)["']""", re.MULTILINE)


@functools.lru_cache(maxsize=None)
def _shared_name(path: Path) -> str | None:
    """The ``SHARE_SANDBOX`` a test module sets (read from its text: pytest-xdist's controller schedules
    by node id and never imports the modules)."""
    try:
        found = _SHARE_LINE.search(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    return found.group(1) if found else None


def _group(path: Path) -> str:
    """Where a test module's tests run together: with the modules it shares a sandbox with, else alone."""
    shared = _shared_name(path)
    return f"sandbox {shared}" if shared else path.as_posix()


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture: a module's tests keep their order
def pytest_collection_modifyitems(session, config, items):
    """The heaviest groups first (:data:`MODULE_SECONDS`, summed over a group's modules); the tests of a
    group stay together and the order within a module is kept."""
    position = {id(item): i for i, item in enumerate(items)}
    first: dict[str, int] = {}
    modules: dict[str, set] = {}
    for i, item in enumerate(items):
        first.setdefault(_group(item.path), i)
        modules.setdefault(_group(item.path), set()).add(item.path)

    def seconds(path: Path) -> int:
        return MODULE_SECONDS.get(path.name, 30 if "integration" in path.parts else 0)

    weight = {g: sum(seconds(p) for p in paths) for g, paths in modules.items()}
    items.sort(key=lambda item: (-weight[_group(item.path)], first[_group(item.path)], position[id(item)]))


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: pytest-xdist may be absent
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with the modules of one ``SHARE_SANDBOX`` as one unit, handed out in collection
    order (the heaviest first, above), not xdist's default of the units with the most tests first."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    rootdir = config.rootpath

    class ByModuleAndSharedSandbox(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(rootdir / nodeid.split("::", 1)[0])

    config.option.loadscopereorder = False
    return ByModuleAndSharedSandbox(config, log)


@pytest.fixture(scope="session")
def _shared_sandboxes():
    """The sandboxes modules share (``SHARE_SANDBOX``), by name: [context, sandbox, spec, modules still to run]."""
    pool: dict[str, list] = {}
    yield pool
    for context, *_ in pool.values():  # a module of the group was deselected or failed to set up
        context.__exit__(None, None, None)


@pytest.fixture(scope="module")
def cluster(request, _shared_sandboxes):
    """A module-wide sandbox: 3 ZooKeeper voters, 2 joiners, 3 brokers and 3 spare brokers.

    A module may set ``SANDBOX = dict(...)`` (SandboxSpec fields) to get another shape. Modules that
    set the same ``SHARE_SANDBOX = "name"`` (and the same ``SANDBOX``) share one sandbox, started for the
    first of them and stopped after the last: they run on one worker, one after the other.
    """
    spec = getattr(request.module, "SANDBOX", None) or DEFAULT_SANDBOX
    name = getattr(request.module, "SHARE_SANDBOX", None)
    if name is None:
        with running_sandbox(spec) as sandbox:
            yield sandbox
        return
    pool = _shared_sandboxes
    if name not in pool:
        modules = {item.module.__name__ for item in request.session.items
                   if getattr(item.module, "SHARE_SANDBOX", None) == name}
        context = running_sandbox(spec)
        pool[name] = [context, context.__enter__(), spec, modules]
    context, sandbox, shared_spec, modules = pool[name]
    assert shared_spec == spec, f"the modules sharing the sandbox {name!r} ask different shapes: {shared_spec} and {spec}"
    yield sandbox
    modules.discard(request.module.__name__)
    if not modules:
        del pool[name]
        context.__exit__(None, None, None)


@pytest.fixture
def topic_name(request):
    """A topic name unique to this test."""
    return unique_topic(request.node.name.split("[")[0][:40].replace("_", "-"))
