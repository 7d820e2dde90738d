"""A real local Kafka + ZooKeeper cluster, one JVM process per node, node N on 127.0.0.N.

The same code serves ``kmigrate sandbox``, the test fixtures and the benchmarks.
"""

from migrate.sandbox.cluster import Sandbox, default_sandbox_dir
from migrate.sandbox.layout import SandboxSpec

__all__ = ["Sandbox", "SandboxSpec", "default_sandbox_dir"]
