"""Test harness over the sandbox, importable without pytest (the pytest glue is ``tests/conftest.py``).

Each cluster gets its own loopback prefix (``127.A.B``) whose ports are free, so test modules,
benchmarks and a developer's own ``kmigrate sandbox`` never collide.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from migrate.adapters.processes import terminate
from migrate.sandbox.cluster import Sandbox
from migrate.sandbox.launch import port_free
from migrate.sandbox.layout import SandboxSpec

PORTS = (2181, 2182, 2888, 3888, 9092, 9093)  # 2182: --zookeeper-tls's secureClientPort; 9093: KRaft controllers


def worker_octets() -> range:
    """The second octets (``127.A``) this process draws its prefixes from: all of them, or under pytest-xdist
    (``$PYTEST_XDIST_WORKER`` = ``gw<i>`` of ``$PYTEST_XDIST_WORKER_COUNT``) a slice of its own per worker,
    so that two workers of one run never race for the same prefix between the probe and the servers' bind."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    try:
        count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
        index = int(worker.removeprefix("gw")) if worker.startswith("gw") else -1
    except ValueError:
        return range(1, 255)
    if count < 2 or not 0 <= index < count:
        return range(1, 255)
    span = 254 // count
    return range(1 + index * span, 1 + (index + 1) * span)


_handed_out: set[str] = set()  # prefixes this process returned: never twice (a cluster may not have bound them yet)


def free_ip_prefix(nodes: int = 8, rng: random.Random | None = None) -> str:
    """A ``127.A.B`` prefix whose addresses ``.1`` .. ``.nodes`` have the sandbox ports free.

    ``A`` is from :func:`worker_octets`; a prefix is returned once per process.
    $KMIGRATE_TEST_IP_PREFIX forces one.
    """
    forced = os.environ.get("KMIGRATE_TEST_IP_PREFIX")
    if forced:
        return forced
    rng = rng or random.Random()
    octets = worker_octets()
    for _ in range(200):
        prefix = f"127.{rng.choice(octets)}.{rng.randint(0, 254)}"
        if prefix in _handed_out:
            continue
        if all(port_free(f"{prefix}.{i}", p) for i in range(1, nodes + 1) for p in PORTS):
            _handed_out.add(prefix)
            return prefix
    raise RuntimeError("no free loopback prefix found for a test cluster")


@contextmanager
def running_sandbox(spec_kwargs: dict | None = None, base_dir: str | None = None) -> Iterator[Sandbox]:
    """Start a sandbox on a free loopback prefix, yield it, and always tear it down.

    Its directory (data and logs: gigabytes after a benchmark) is removed afterwards, unless the
    body raised (the logs show why) or $KMIGRATE_KEEP_SANDBOX is set.
    """
    kwargs = dict(spec_kwargs or {})
    count = len(kwargs.get("zookeeper_ids", (1, 2, 3))) + len(kwargs.get("spare_zookeeper_ids", ()))
    count = max(count, len(kwargs.get("broker_ids", (1, 2, 3))) + len(kwargs.get("spare_broker_ids", ())),
                len(kwargs.get("controller_ids", ())) + len(kwargs.get("spare_controller_ids", ())))
    kwargs.setdefault("ip_prefix", free_ip_prefix(count))
    directory = Path(tempfile.mkdtemp(prefix="kmigrate-sandbox-", dir=base_dir))
    sandbox = Sandbox(directory)
    failed = True
    try:
        sandbox.up(SandboxSpec(**kwargs))
        yield sandbox
        failed = False
    finally:
        sandbox.down()
        if failed or os.environ.get("KMIGRATE_KEEP_SANDBOX"):
            print(f"sandbox kept in {directory}", file=sys.stderr)
        else:
            shutil.rmtree(directory, ignore_errors=True)


def unique_topic(prefix: str = "t") -> str:
    """A topic name unique to one test."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def produce_waiting(producer, topic: str, key: bytes | None, value: bytes | None, **kwargs) -> None:
    """``producer.produce`` (confluent-kafka), waiting while its local queue is full."""
    while True:
        try:
            producer.produce(topic, key=key, value=value, **kwargs)
            return
        except BufferError:
            producer.poll(0.1)


def stop_process(proc, timeout_s: float = 30) -> None:
    """SIGTERM a child process (``subprocess.Popen``), SIGKILL it if it outlives ``timeout_s``, and reap it.
    One that already ended is left alone (reaped, its pid may name another process by now)."""
    if proc.poll() is not None:
        return
    terminate(proc.pid, timeout_s=timeout_s)
    proc.poll()  # terminate collected its exit status: the Popen learns it ended
