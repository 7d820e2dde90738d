"""Kafka clients: the settings of a trusted producer, TLS material for kafka-python, and a confluent-kafka
AdminClient that has answered (with the two reads of the brokers it reaches: their ids and static configs).
The admin calls live beside it: ``admin`` (the partition mover's ReassignmentAdmin), ``retry`` (which
errors are worth another try), ``topics`` (create and wait for leaders), ``health`` and ``acls``.

Every call has a timeout; an unreachable cluster is a ``BadInput`` with the address, not a hang.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator

from confluent_kafka.admin import AdminClient, ConfigResource

from migrate.adapters import LIBRDKAFKA_LOG
from migrate.core.clientconfig import ClientSettings
from migrate.errors import BadInput

log = logging.getLogger("kmigrate.kafka")


# Settings for a producer whose acknowledgements are trusted (the bookkeeping writer, the canary):
# idempotent, acks=all, and one produce request in flight per broker. With several in flight,
# librdkafka (2.16 here) can report records as delivered that were never written: the first requests
# to a partition whose leader does not know it yet (a topic just created, a leader just elected) fail
# with UNKNOWN_TOPIC_OR_PART or NOT_LEADER_OR_FOLLOWER; a later request already on the wire succeeds,
# the broker (no state yet for that producer id on the partition) taking its batch as the producer's
# first; librdkafka then counts the failed batches as "implicitly acked by subsequent batch success".
# Seen on a just-created bookkeeping topic in 1 fresh cluster of 8 (the plan record and a write-ahead
# throttle record acknowledged, not in the log); reported for Go as confluent-kafka-go issue 921.
# With one in flight, a later request waits unsent and is taken back when an earlier one fails.
TRUSTED_PRODUCER = {"acks": "all", "enable.idempotence": True, "max.in.flight.requests.per.connection": 1}


@contextmanager
def _private_file(text: str) -> Iterator[str]:
    """A path whose content is ``text`` for the time of the ``with``: an anonymous memory file on Linux
    (never on disk), elsewhere a temporary file of mode 0600 removed on leaving (error and Ctrl-C too)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kmigrate-client-key", os.MFD_CLOEXEC)
        try:
            os.write(fd, text.encode())
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="kmigrate-client-key-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        yield path
    finally:
        os.unlink(path)


def ssl_context(settings: ClientSettings) -> ssl.SSLContext:
    """The TLS context of ``settings`` for kafka-python, which cannot take PEM text: CA certificates are
    loaded from memory; the key and its chain through :func:`_private_file`, gone once loaded."""
    ca, chain, key = settings.tls_pem()
    s = settings.settings
    ctx = ssl.create_default_context(cadata=ca) if ca else ssl.create_default_context(cafile=s.get("ssl.ca.location"))
    ctx.check_hostname = settings.check_hostname
    if s.get("enable.ssl.certificate.verification", "true").lower() == "false":
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if chain and key:
        with _private_file(key + chain) as path:
            ctx.load_cert_chain(path)
    elif "ssl.certificate.location" in s:
        ctx.load_cert_chain(s["ssl.certificate.location"], s.get("ssl.key.location"), s.get("ssl.key.password"))
    return ctx


def kafka_python_config(settings: ClientSettings, **extra: object) -> dict[str, object]:
    """kafka-python keyword arguments of ``settings``, with an ``ssl_context`` when its TLS material is in memory."""
    kw = settings.kafka_python(**extra)
    if any(settings.tls_pem()):
        kw["ssl_context"] = ssl_context(settings)
    return kw


@contextmanager
def kafka_python_admin(settings: ClientSettings, timeout_s: float = 10.0, client_id: str = "kmigrate") -> Iterator:
    """A kafka-python ``KafkaAdminClient`` of ``settings`` for the time of the ``with``, closed on leaving (a failing
    close ignored). Making it raises what kafka-python raises (unreachable, a login refused): the caller decides."""
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(**kafka_python_config(settings, request_timeout_ms=int(timeout_s * 1000),
                                                    client_id=client_id))
    try:
        yield client
    finally:
        try:
            client.close()
        except Exception:  # closing a client whose connections failed
            pass


def admin_client(settings: ClientSettings, timeout_s: float = 10.0) -> AdminClient:
    """A confluent-kafka AdminClient that has answered a metadata request (BadInput when unreachable)."""
    watch = _AuthenticationWatch(settings.bootstrap_servers)
    admin = AdminClient(settings.confluent(logger=LIBRDKAFKA_LOG, error_cb=watch))
    deadline = time.monotonic() + timeout_s
    while True:  # a second at a time: librdkafka retries a refused login forever; the error callback tells
        left = deadline - time.monotonic()
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, left)))
            watch.done = True
            return admin
        except Exception as exc:  # KafkaException on timeout or auth failure
            admin.poll(0)  # serves the error callback
            if watch.failure is not None:
                watch.done = True
                raise BadInput(watch.failure) from None
            if left <= 1.0:
                watch.done = True
                raise BadInput(
                    f"cannot reach Kafka at {settings.bootstrap_servers} within {timeout_s:.0f} s ({exc}): "
                    "check --bootstrap-server and --command-config"
                ) from None


class _AuthenticationWatch:
    """librdkafka's error callback while a client first connects: keeps the first error no retry cures
    (:func:`migrate.core.clientconfig.authentication_failure`); afterwards (``done``) ignores all."""

    def __init__(self, bootstrap_servers: str):
        self.bootstrap_servers = bootstrap_servers
        self.failure: str | None = None
        self.done = False

    def __call__(self, err) -> None:
        from migrate.core.clientconfig import authentication_failure

        if not self.done and self.failure is None:
            self.failure = authentication_failure(err.name(), err.str(), self.bootstrap_servers)


def broker_config_entries(admin: AdminClient, broker_ids, timeout_s: float = 15.0,
                          skip_failed: bool = False) -> Iterator[tuple[int, dict]]:
    """(broker id, its DescribeConfigs entries by name), one broker at a time, in the order of ``broker_ids``
    (librdkafka takes one BROKER resource per call; a caller may stop early). ``skip_failed``: a broker that does not
    answer is logged and left out; else its error is raised."""
    for b in broker_ids:
        try:
            futures = admin.describe_configs([ConfigResource(ConfigResource.Type.BROKER, str(b))], request_timeout=timeout_s)
            entries = next(iter(futures.values())).result(timeout=timeout_s)
        except Exception as exc:
            if not skip_failed:
                raise
            log.debug("DescribeConfigs of broker %s failed: %s", b, exc)
            continue
        yield int(b), entries


def broker_static_configs(admin: AdminClient, broker_ids: list[int], names: tuple[str, ...],
                          timeout_s: float = 15.0) -> dict[int, dict[str, str | None]]:
    """The named configs of each broker as the broker reports them (``zookeeper.connect`` is static).

    >>> broker_static_configs(admin, [1, 2], ("zookeeper.connect", "broker.rack"))  # doctest: +SKIP
    {1: {"zookeeper.connect": "zk1:2181/kafka", "broker.rack": "AD-1/FD-1"}, ...}
    """
    return {b: {n: (entries[n].value if n in entries else None) for n in names}
            for b, entries in broker_config_entries(admin, broker_ids, timeout_s)}


def live_broker_ids(admin: AdminClient, timeout_s: float = 10.0) -> list[int]:
    """Ids of the brokers in the cluster's metadata (the brokers that are up)."""
    return sorted(admin.list_topics(timeout=timeout_s).brokers)
