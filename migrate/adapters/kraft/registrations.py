"""Broker registrations of a KRaft cluster, read through the admin API: DescribeCluster v2 with
``IncludeFencedBrokers`` (KIP-1073, Kafka 4.0+) at a broker lists every registered broker, the stopped (fenced) ones
too, each with its fenced flag; a plain Metadata or DescribeCluster lists only the live ones. Asked on one connection
of kafka-python's own (as the controllers are, :func:`migrate.adapters.kafka.quorum._ask_controller`), pinned to v2.

On Kafka 3.9 (DescribeCluster v1 at most) the fenced brokers cannot be listed: :func:`broker_registrations` then
says so (``complete`` False) and gives the live ones.
"""

from __future__ import annotations

import logging
import socket
from typing import Sequence

from migrate.adapters.kafka.quorum import _ask_controller
from migrate.core.brokers.unregister import Registration
from migrate.core.clientconfig import ClientSettings
from migrate.core.units import split_host_port
from migrate.errors import StepFailed

log = logging.getLogger("kmigrate.kafka")

BROKER_ENDPOINTS = 1


def _describe_cluster(address: str, version: int, settings: ClientSettings | None, timeout_s: float) -> dict | None:
    from kafka.protocol.admin.cluster import DescribeClusterRequest

    fields = {"include_cluster_authorized_operations": False}
    if version >= 1:
        fields["endpoint_type"] = BROKER_ENDPOINTS
    if version >= 2:
        fields["include_fenced_brokers"] = True
    return _ask_controller(address, DescribeClusterRequest(**fields), version, timeout_s, settings)


def broker_registrations(bootstrap: Sequence[str], settings: ClientSettings | None = None,
                         timeout_s: float = 10.0) -> tuple[dict[int, Registration], bool]:
    """``({broker id: Registration}, complete)`` from the first broker of ``bootstrap`` that answers: complete when
    it listed the fenced brokers too (DescribeCluster v2, Kafka 4.0+). StepFailed when none answers."""
    for address in bootstrap:
        for version, complete in ((2, True), (1, False)):
            answer = _describe_cluster(address, version, settings, timeout_s)
            if answer is None or answer.get("error_code"):
                log.debug("DescribeCluster v%s at %s: %s", version, address,
                          "no answer" if answer is None else answer.get("error_code"))
                continue
            regs = {int(b["broker_id"]): Registration(int(b["broker_id"]), str(b["host"]), int(b["port"]),
                                                      bool(b.get("is_fenced", False)) if complete else False)
                    for b in answer.get("brokers") or []}
            return regs, complete
    raise StepFailed(f"no broker answered DescribeCluster at {', '.join(bootstrap)}: check --bootstrap-server")


def listening(address: str, timeout_s: float = 2.0) -> bool:
    """Whether ``host:port`` accepts a TCP connection (a broker's process still runs there)."""
    host, port = split_host_port(address, 9092, "broker address")
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout_s):
            return True
    except OSError:
        return False
