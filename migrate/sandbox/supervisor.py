"""The processes of a sandbox's nodes: start one, tell whether it runs, signal, stop and wait for it.

Each node is one detached JVM process (its own session), so a sandbox outlives the command that started it.
Its pid is kept in its :class:`NodeState`, recorded with the sandbox's spec in ``state.json`` (written after
each process starts, so ``down`` can clean up after a crash mid-``up``). A pid is only signalled when its
command line names that node's directory (no stray kills after pid reuse).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from migrate.adapters.processes import command_line, pid_alive, spawn, stopped, terminate
from migrate.errors import BadInput
from migrate.sandbox.layout import SandboxSpec
from migrate.waiting import poll

STATE_FILE = "state.json"
STATE_VERSION = 1


@dataclass
class NodeState:
    kind: str  # "zookeeper" | "kafka" | "controller" (KRaft)
    id: int
    host: str
    dir: str
    pid: int | None = None
    spare: bool = False  # spare broker / ZooKeeper joiner / spare KRaft controller (an observer)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.id}"


def read_state(directory: Path) -> tuple[SandboxSpec, dict[str, NodeState]]:
    """The spec and nodes (by name) recorded in ``directory``'s ``state.json``; BadInput when it is not one."""
    try:
        raw = json.loads((directory / STATE_FILE).read_text())
        if raw.get("version") != STATE_VERSION:
            raise ValueError("version")
        spec = dict(raw["spec"])
        for key in ("zookeeper_ids", "spare_zookeeper_ids", "broker_ids", "spare_broker_ids"):
            spec[key] = tuple(spec[key])
        for key in ("controller_ids", "spare_controller_ids"):  # a native KRaft sandbox's (absent from older files)
            if key in spec:
                spec[key] = tuple(spec[key])
        return SandboxSpec(**spec), {n["kind"] + "-" + str(n["id"]): NodeState(**n) for n in raw["nodes"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise BadInput(
            f"{directory / STATE_FILE} is not a kmigrate sandbox state file ({exc}): remove it or choose another --dir"
        ) from None


def write_state(directory: Path, spec: SandboxSpec, nodes: dict[str, NodeState]) -> None:
    """Record ``spec`` and ``nodes`` in ``directory``'s ``state.json`` (through a temporary file)."""
    directory.mkdir(parents=True, exist_ok=True)
    raw = {"version": STATE_VERSION, "spec": asdict(spec), "nodes": [asdict(n) for n in nodes.values()]}
    tmp = directory / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(raw, indent=2, sort_keys=True))
    tmp.replace(directory / STATE_FILE)


class NodeProcesses:
    """The node processes of one sandbox, as this process sees them (those it started are its children).
    Safe to use from another process than the one that started them."""

    def __init__(self):
        self._children: dict[int, subprocess.Popen] = {}
        self.started_s: dict[str, float] = {}

    def is_alive(self, node: NodeState) -> bool:
        if node.pid is None:
            return False
        child = self._children.get(node.pid)
        if child is not None:
            # Our own child: trust poll(). (Between fork and exec its cmdline is still ours, not the JVM's.)
            return child.poll() is None
        return pid_alive(node.pid) and node.dir in " ".join(command_line(node.pid))

    def start(self, node: NodeState, command: list[str]) -> None:
        """Start ``node``'s process (its output appended to ``stdout.log`` in its directory); sets ``node.pid``."""
        proc = spawn(command, node.dir, Path(node.dir) / "stdout.log")
        self._children[proc.pid] = proc
        node.pid = proc.pid
        self.started_s[node.name] = time.monotonic()

    def signal(self, node: NodeState, sig: int) -> None:
        """Send ``sig`` to a running node; BadInput when it is not running. A SIGSTOP returns once every
        thread of the node has stopped (a hung host answers nothing from then on)."""
        if not self.is_alive(node):
            raise BadInput(f"{node.name} is not running: start it with kmigrate sandbox restart {node.name}")
        os.kill(node.pid, sig)  # type: ignore[arg-type]
        if sig == signal.SIGSTOP and not poll(lambda: stopped(node.pid), timeout_s=10, interval_s=0.05):  # type: ignore[arg-type]
            raise RuntimeError(f"{node.name} (pid {node.pid}) did not stop within 10 s of SIGSTOP")

    def stop(self, nodes: list[NodeState], timeout_s: float) -> None:
        """Stop running ``nodes`` together: SIGTERM to each, then wait for each in turn up to ``timeout_s``
        and SIGKILL the ones still there (``processes.terminate``)."""
        terminate(*(node.pid for node in nodes), timeout_s=timeout_s)  # type: ignore[misc]
        for node in nodes:
            child = self._children.pop(node.pid, None)  # type: ignore[arg-type]
            if child is not None:
                child.poll()  # terminate collected its exit status: the Popen learns it ended

    def kill(self, node: NodeState) -> None:
        """kill -9 a running node and wait (10 s at most) until it is gone."""
        self.signal(node, signal.SIGKILL)
        self.wait_dead(node, 10)

    def wait_dead(self, node: NodeState, timeout_s: float) -> bool:
        if poll(lambda: not self.is_alive(node), timeout_s=timeout_s, interval_s=0.1):
            self._reap(node)
            return True
        return False

    def _reap(self, node: NodeState) -> None:
        child = self._children.pop(node.pid, None) if node.pid is not None else None
        if child is not None:
            child.wait(timeout=5)
