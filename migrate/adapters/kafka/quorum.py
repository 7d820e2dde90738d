"""The KRaft metadata quorum as Kafka shows it: DescribeQuorum and the controllers' own configs.

- Asked of a controller itself, on its controller listener (:func:`describe_quorum_at_controller`,
  :func:`controller_configs`): a controller has no Metadata API, so no kafka-python client bootstraps on it; one
  connection of kafka-python's own (``kafka.net.KafkaConnectionManager``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL as the
  ``--controller-command-config`` says) sends the request to the address without a Metadata request, as
  ``kafka-metadata-quorum --bootstrap-controller`` does. Works from the controllers' first start.
- Through a broker (:func:`describe_quorum`), which forwards it to the active controller: a KRaft broker only.
  DescribeQuorum's listeners are ``broker`` and ``controller``, not ``zkBroker``: a ZooKeeper-mode broker, one
  in migration mode (roll 1) included, does not answer it (seen on 3.9.2).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from migrate.adapters.kafka.client import kafka_python_admin, kafka_python_config
from migrate.core.clientconfig import ClientSettings
from migrate.core.kraft.config import SENSITIVE

log = logging.getLogger("kmigrate.kafka")


def describe_quorum(settings: ClientSettings, timeout_s: float = 10.0) -> dict | None:
    """DescribeQuorum's answer (kafka-python's dict) through the first broker of ``settings`` that gives one, or
    None when none does (no broker forwards it: no controller yet, or every broker still in plain ZooKeeper mode).
    Each broker is asked alone (a client bootstrapped on it), so one that cannot forward does not hide the others."""
    for address in [a.strip() for a in settings.bootstrap_servers.split(",") if a.strip()]:
        try:
            with kafka_python_admin(replace(settings, bootstrap_servers=address), timeout_s, "kmigrate-kraft") as client:
                answer = client.describe_metadata_quorum()
            part = answer["topics"][0]["partitions"][0]
            if not part.get("error"):
                return answer
            log.debug("DescribeQuorum through %s: %s", address, part.get("error"))
        except Exception as exc:  # an unreachable broker, or one that cannot forward: try the next
            log.debug("DescribeQuorum through %s failed: %s", address, exc)
    return None


DESCRIBE_QUORUM_VERSION = 1  # 3.4+ (v1 adds the replicas' fetch timestamps); 3.9 answers 0..2


def _ask_controller(address: str, request, version: int, timeout_s: float,
                    settings: ClientSettings | None = None) -> dict | None:
    """One request to a controller's controller listener, on one connection of kafka-python's own
    (``kafka.net.KafkaConnectionManager``: ApiVersions, then TLS and SASL as ``settings`` say; PLAINTEXT without
    them). No Metadata request: a controller has no Metadata API, so no kafka-python client can bootstrap on it
    (``kafka-metadata-quorum --bootstrap-controller`` does the same from Java). Its answer as a dict, or None when it
    does not answer (down, not a controller, another protocol). BadInput when the controller refuses the login or
    the certificate (no retry cures that)."""
    import kafka.errors as Errors
    from kafka.net import KafkaConnectionManager, NetworkSelector

    from migrate.core.clientconfig import ClientSettings as Settings
    from migrate.core.units import split_host_port
    from migrate.errors import BadInput

    split_host_port(address, 9093, "--bootstrap-controller")  # BadInput on a malformed address
    base = settings if settings is not None else Settings(address)
    timeout_ms = int(timeout_s * 1000)
    config = kafka_python_config(replace(base, bootstrap_servers=address), request_timeout_ms=timeout_ms,
                                 socket_connection_setup_timeout_ms=timeout_ms, client_id="kmigrate-kraft")
    request.API_VERSION = version
    net = manager = None
    try:
        net = NetworkSelector(**config)
        manager = KafkaConnectionManager(net, **config)
        node = manager.cluster.bootstrap_brokers()[0].node_id
        # no metadata refresh when the connection fails: it would try to bootstrap (Metadata) on the controller
        conn = manager.get_connection(node, timeout_ms=timeout_ms, refresh_metadata_on_err=False)
        net.poll(timeout_ms=timeout_ms, future=conn.init_future)
        if not conn.init_future.is_done:
            raise Errors.KafkaTimeoutError(f"no connection within {timeout_s:g} s")
        if conn.init_future.failed():
            if conn.broker_version_data is not None and str(config.get("security_protocol", "")).startswith("SASL"):
                # ApiVersions answered, then the connection ended during the SASL exchange: Kafka closes it after a
                # failed login, and kafka-python sometimes reads the close before the error answer
                raise Errors.SaslAuthenticationFailedError(f"the connection ended during the SASL login "
                                                           f"({conn.init_future.exception})")
            raise conn.init_future.exception
        answer = conn.send_request(request, request_timeout_ms=timeout_ms)
        net.poll(timeout_ms=timeout_ms, future=answer)
        if not answer.is_done:
            raise Errors.KafkaTimeoutError(f"no answer within {timeout_s:g} s")
        if answer.failed():
            raise answer.exception
        return answer.value.to_dict()
    except (Errors.SaslAuthenticationFailedError, Errors.AuthorizationError) as exc:
        raise BadInput(f"controller {address} refused kmigrate's login ({exc}): check --controller-command-config "
                       "(the controller listener's security.protocol, sasl.mechanism and sasl.jaas.config)") from None
    except Exception as exc:  # down, restarting, not a controller, a protocol it does not speak
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):
            raise BadInput(f"controller {address}: its certificate is not trusted ({exc}): give the CA in "
                           "--controller-command-config (ssl.truststore.location)") from None
        log.debug("%s at controller %s failed: %s", type(request).__name__, address, exc)
        return None
    finally:
        for closing in (manager, net):
            if closing is not None:
                try:
                    closing.close()
                except Exception:
                    pass


def describe_quorum_at_controller(address: str, timeout_s: float = 5.0, settings: ClientSettings | None = None,
                                  version: int = DESCRIBE_QUORUM_VERSION) -> dict | None:
    """DescribeQuorum asked of the controller at ``address`` (``host:port``) itself, connected as ``settings`` say
    (their security settings; None: PLAINTEXT); None when it does not answer. ``version`` 2 (Kafka 3.9+) adds each
    replica's ``replica_directory_id`` and the voters' endpoints (``nodes``)."""
    from kafka.protocol.admin.cluster import DescribeQuorumRequest

    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(topics=[topic(topic_name="__cluster_metadata",
                                                  partitions=[topic.PartitionData(partition_index=0)])])
    answer = _ask_controller(address, request, version, timeout_s, settings)
    if answer is None:
        return None
    part = answer["topics"][0]["partitions"][0]
    if answer.get("error_code") or part.get("error_code"):
        log.debug("DescribeQuorum at controller %s: error %s/%s", address, answer.get("error_code"), part.get("error_code"))
        return None
    return answer


def controller_configs(address: str, node_id: int, names: tuple[str, ...], timeout_s: float = 5.0,
                       settings: ClientSettings | None = None) -> dict[str, str | None] | None:
    """The named configs of controller ``node_id`` as it runs them (DescribeConfigs on its controller listener,
    KIP-919), e.g. ``zookeeper.metadata.migration.enable``; None when it does not answer."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest

    resource = DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name=str(node_id),
                                                              configuration_keys=list(names))
    answer = _ask_controller(address, DescribeConfigsRequest(resources=[resource], include_synonyms=False,
                                                             include_documentation=False),
                             4, timeout_s, settings)
    if answer is None or not answer.get("results") or answer["results"][0].get("error_code"):
        return None
    return {c["name"]: c["value"] for c in answer["results"][0].get("configs") or []}


def broker_file_configs(settings: ClientSettings, broker_ids: list[int], timeout_s: float = 15.0) -> dict[int, dict[str, str]]:
    """Each broker's settings from its ``server.properties`` as it reports them (DescribeConfigs, source
    STATIC_BROKER_CONFIG); a sensitive value (passwords, JAAS) comes back hidden and reads :data:`~migrate.core.kraft.config.SENSITIVE`.
    A broker that does not answer is left out."""
    from confluent_kafka.admin import ConfigSource

    from migrate.adapters.kafka.client import admin_client, broker_config_entries

    admin = admin_client(settings, timeout_s=timeout_s)
    return {b: {name: (SENSITIVE if e.is_sensitive or e.value is None else e.value) for name, e in sorted(entries.items())
                if int(getattr(e.source, "value", e.source)) == ConfigSource.STATIC_BROKER_CONFIG.value}
            for b, entries in broker_config_entries(admin, broker_ids, timeout_s, skip_failed=True)}


def configured_voters(settings: ClientSettings, broker_ids: list[int], timeout_s: float = 10.0) -> str | None:
    """``controller.quorum.voters`` as the first of ``broker_ids`` that runs with it reports it (a broker of roll 1
    or a KRaft broker), or None (no broker has it yet, or none answers)."""
    from migrate.adapters.kafka.client import admin_client, broker_config_entries

    try:
        admin = admin_client(settings, timeout_s=timeout_s)
    except Exception as exc:  # BadInput: the brokers are not reachable; the caller reads without them
        log.debug("no admin client on %s: %s", settings.bootstrap_servers, exc)
        return None
    for _b, entries in broker_config_entries(admin, broker_ids, timeout_s, skip_failed=True):  # the first that has it
        entry = entries.get("controller.quorum.voters")
        if entry is not None and entry.value:
            return entry.value
    return None
