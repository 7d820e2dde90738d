"""What the cluster shows during a KRaft rollback: each broker's ``zookeeper.metadata.migration.enable`` as it runs
(DescribeConfigs: ZooKeeper-mode brokers answer it, the flag reads ``false`` without it), the partitions with no
leader (the metadata a broker serves), and which controller listeners still accept connections."""

from __future__ import annotations

import logging

from migrate.core.clientconfig import ClientSettings

log = logging.getLogger("kmigrate.kafka")


def broker_migration_flags(settings: ClientSettings, broker_ids: tuple[int, ...], flag: str,
                           timeout_s: float = 10.0) -> dict[int, bool]:
    """Broker id -> whether it runs with ``flag`` set to true; a broker that does not answer is left out (as are
    all when no broker answers)."""
    return {b: str(conf[flag]).strip().lower() == "true"  # None (not reported) reads false
            for b, conf in broker_configs(settings, broker_ids, (flag,), timeout_s).items()}


def broker_configs(settings: ClientSettings, broker_ids: tuple[int, ...], names: tuple[str, ...],
                   timeout_s: float = 10.0) -> dict[int, dict[str, str | None]]:
    """Broker id -> the named configs as it runs them (DescribeConfigs through the brokers of ``settings``; a name
    it does not report reads None); a broker that does not answer is left out (all when none answers)."""
    from migrate.adapters.kafka.client import admin_client, broker_config_entries

    try:
        admin = admin_client(settings, timeout_s=timeout_s)
    except Exception as exc:  # BadInput: no broker reachable right now (they are restarting)
        log.debug("no admin client on %s: %s", settings.bootstrap_servers, exc)
        return {}
    return {b: {n: (got[n].value if n in got else None) for n in names}
            for b, got in broker_config_entries(admin, broker_ids, timeout_s, skip_failed=True)}


def listed_brokers(settings: ClientSettings, timeout_s: float = 5.0) -> tuple[str | None, tuple[int, ...]]:
    """The cluster id and the broker ids the brokers of ``settings`` give in their metadata ((None, ()) when none
    answers)."""
    from migrate.adapters.kafka.client import admin_client

    try:
        md = admin_client(settings, timeout_s=timeout_s).list_topics(timeout=timeout_s)
    except Exception as exc:
        log.debug("metadata from %s failed: %s", settings.bootstrap_servers, exc)
        return None, ()
    return md.cluster_id or None, tuple(sorted(int(b) for b in md.brokers))


def offline_partitions(settings: ClientSettings, timeout_s: float = 10.0) -> tuple[str, ...] | None:
    """``topic-partition`` of every partition without a leader in the metadata; None when no broker answers."""
    from migrate.adapters.kafka.client import admin_client

    try:
        md = admin_client(settings, timeout_s=timeout_s).list_topics(timeout=timeout_s)
    except Exception as exc:
        log.debug("metadata from %s failed: %s", settings.bootstrap_servers, exc)
        return None
    return tuple(f"{name}-{p.id}" for name, t in sorted(md.topics.items())
                 for p in sorted(t.partitions.values(), key=lambda x: x.id) if p.leader < 0)


def accepting(addresses: tuple[str, ...], timeout_s: float = 3.0) -> tuple[str, ...]:
    """The ``host:port`` of ``addresses`` that accept a TCP connection (a process listens there): a controller whose
    listener still accepts is not stopped, even when it does not answer kmigrate (TLS/SASL it was not given)."""
    import socket

    from migrate.core.units import split_host_port

    out = []
    for address in addresses:
        host, port = split_host_port(address, 9093, "--bootstrap-controller")
        try:
            with socket.create_connection((host.strip("[]"), port), timeout=timeout_s):
                out.append(address)
        except OSError:
            continue
    return tuple(out)
