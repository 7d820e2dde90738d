"""Helpers for the ``kmigrate zookeeper`` integration tests: run the real CLI, read the real ensemble."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kazoo.client import KazooClient

from migrate.sandbox import Sandbox
from migrate.sandbox.layout import ZkNode
from migrate.core.zookeeper.config import DynamicConfig, parse_config
from cluster_waits import wait_for

_PARTITION_STATE = re.compile(r".*/brokers/topics/[^/]+/partitions/\d+/state$")
# Kafka rewrites these itself (notifications, elections, broker sessions): not "data" of the change.
VOLATILE_PREFIXES = (
    "/isr_change_notification/", "/log_dir_event_notification/", "/admin/", "/controller",
    "/brokers/ids/", "/latest_producer_id_block", "/kmigrate",
)


def spec_of(z: ZkNode) -> str:
    """The inline ``--add`` spec of a sandbox server, in ZooKeeper's syntax."""
    return f"{z.id}={z.host}:{z.quorum_port}:{z.election_port};{z.host}:{z.client_port}"


def addresses(nodes) -> str:
    return ",".join(f"{z.host}:{z.client_port}" for z in nodes)


def zk_nodes(sandbox: Sandbox, ids) -> list[ZkNode]:
    by_id = {z.id: z for z in sandbox.spec.zookeepers}
    return [by_id[i] for i in ids]


def run_cli(args: list[str], env: dict | None = None, timeout_s: float = 400) -> subprocess.CompletedProcess:
    """Run ``kmigrate`` as operators do (a real process, real exit code)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], capture_output=True, text=True, timeout=timeout_s, env=full_env,
    )


def run_json(args: list[str], env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    proc = run_cli([*args, "--output", "json"], env)
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        data = None
    return proc, data


def session(hosts: str) -> KazooClient:
    zk = KazooClient(hosts=hosts, timeout=15)
    zk.start(timeout=30)
    return zk


def committed(hosts: str) -> DynamicConfig:
    zk = session(hosts)
    try:
        zk.sync("/zookeeper/config")
        data, _ = zk.get("/zookeeper/config")
        return parse_config(data.decode())
    finally:
        zk.stop()
        zk.close()


def tree(hosts: str, chroot: str = "") -> dict[str, bytes]:
    """Every znode (path -> data) except ZooKeeper's own and Kafka's volatile ones."""
    zk = session(hosts)
    out: dict[str, bytes] = {}
    try:
        stack = [chroot or "/"]
        while stack:
            path = stack.pop()
            if path == "/zookeeper" or any(path.startswith(p) or path == p.rstrip("/") for p in VOLATILE_PREFIXES):
                continue
            try:
                data, _ = zk.get(path)
                children = zk.get_children(path)
            except Exception:
                continue
            # a partition's leader and ISR are Kafka's to change at any time; its presence is what counts
            out[path] = b"<leader and isr>" if _PARTITION_STATE.match(path) else data
            stack.extend((path.rstrip("/") + "/" + c) for c in children)
    finally:
        zk.stop()
        zk.close()
    return out


def seed(hosts: str, count: int = 200) -> None:
    """Znodes of our own, to check byte for byte after the change."""
    zk = session(hosts)
    try:
        zk.ensure_path("/kmigrate-test-data")
        for i in range(count):
            zk.create(f"/kmigrate-test-data/n-{i:04d}", os.urandom(64) + f"-{i}".encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()


def broker_ids(hosts: str, chroot: str = "") -> list[int]:
    zk = session(hosts)
    try:
        return sorted(int(i) for i in zk.get_children(f"{chroot}/brokers/ids"))
    finally:
        zk.stop()
        zk.close()


def figure(name: str, value) -> None:
    """Print a measured figure (run pytest with -s to see them); $KMIGRATE_FIGURES appends them to a file."""
    line = f"FIGURE {name} = {value}"
    print(line)
    path = os.environ.get("KMIGRATE_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def wipe_server(sandbox: Sandbox, z: ZkNode) -> None:
    """Stop a sandbox ZooKeeper server and forget its data and dynamic config files."""
    sandbox.stop(z.name)
    home = Path(sandbox.nodes[z.name].dir)
    shutil.rmtree(home / "data", ignore_errors=True)
    for f in home.glob("zoo.cfg.dynamic*"):
        f.unlink()


def restart_joiner_with(sandbox: Sandbox, z: ZkNode, dynamic: str) -> None:
    """Restart a sandbox ZooKeeper server with an empty data dir and the given dynamic config."""
    wipe_server(sandbox, z)
    sandbox._start_zookeeper(z, dynamic, sandbox.dist)


def wait_until(predicate, timeout_s: float = 60, what: str = "condition") -> None:
    wait_for(predicate, what=what, timeout_s=timeout_s, interval_s=0.3)
