"""The KRaft voter set, read and changed on the controllers themselves (KIP-853): DescribeQuorum v2, the finalized
``kraft.version`` and its upgrade from a static quorum (UpdateFeatures, Kafka 4.1+), AddRaftVoter, RemoveRaftVoter and
UnregisterBroker.

**Route.** Each request goes to the active controller (the raft leader) on its controller listener, on one
connection of kafka-python's own (``quorum._ask_controller``: ApiVersions, then TLS and SASL as the
``--controller-command-config`` says), as ``kafka-metadata-quorum --bootstrap-controller`` does: from the kmigrate
host, no file of a controller's host needed. A follower controller answers DescribeQuorum, AddRaftVoter and
RemoveRaftVoter with NOT_LEADER_OR_FOLLOWER, so the leader is found first (:func:`find_leader`): DescribeQuorum at each
given controller (only the leader answers it), else DescribeCluster with the controller endpoint type (KIP-919, 3.7+)
at any of them, which names the active controller and every controller's address.

**UpdateFeatures** (``kraft.version=1``, :func:`upgrade_kraft_version`) goes the same way, to the active controller
on its controller listener, as ``kafka-features --bootstrap-controller`` sends it; a controller that is not active
answers NOT_CONTROLLER ("The active controller appears to be node N", seen on 4.1.2 and 4.4.0). Through a broker
(kafka-python's ``update_features``, which a broker forwards) works too (``validate_only`` answered on both releases),
but it needs ``--bootstrap-server``; the controller route needs only the controllers, as every other request here.

**Messages.** kafka-python 3.0 has DescribeQuorum (v0-2, with directory ids and nodes), DescribeCluster,
UpdateFeatures and ApiVersions, but neither AddRaftVoter, RemoveRaftVoter nor UnregisterBroker: :mod:`migrate.adapters.kafka.messages`
declares them from Kafka's own JSON schemas (pinned to 3.9.0), with kafka-python's schema machinery, a private API:
kafka-python is pinned to the 3.0 line in pyproject.toml for it. Kafka's own Admin (``kafka-metadata-quorum
add-controller``) was the other route; it reads the new controller's ``meta.properties`` from local disk, so it only
works on the new controller's host.

**Answers.** Directory ids are given and returned as Kafka prints them (the URL-safe base64 of the 16 bytes, as in
``meta.properties`` and ``kafka-metadata-quorum describe``). A change Kafka refuses raises :class:`VoterChangeError`
(``error`` is Kafka's error name, ``retriable`` when a re-read and a later try can succeed: a change still in flight,
a leader that moved, no answer), except a static quorum (UNSUPPORTED_VERSION), which is BadInput. A change whose answer
is lost may have happened: the caller re-reads the quorum before anything else (never assumes).
"""

from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import dataclass
from typing import Sequence

from migrate.adapters.kafka.quorum import _ask_controller
from migrate.core.clientconfig import ClientSettings
from migrate.core.controllers.quorum import Endpoint, Quorum, quorum_from_answer
from migrate.core.controllers.quorum import kafka_uuid as encode_uuid
from migrate.errors import BadInput, StepFailed

log = logging.getLogger("kmigrate.kafka")

DESCRIBE_QUORUM_VERSION = 2  # 3.9+: directory ids and the voters' endpoints (KIP-853)
DESCRIBE_CLUSTER_VERSION = 1  # 3.7+: EndpointType (KIP-919), 2 = the controllers
CONTROLLER_ENDPOINTS = 2
KRAFT_VERSION = "kraft.version"
DEFAULT_CHANGE_TIMEOUT_S = 30.0

_ERROR_NAMES = {0: "NONE", 6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 31: "CLUSTER_AUTHORIZATION_FAILED",
                35: "UNSUPPORTED_VERSION", 41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 102: "BROKER_ID_NOT_REGISTERED",
                104: "INCONSISTENT_CLUSTER_ID", 125: "INVALID_VOTER_KEY", 126: "DUPLICATE_VOTER", 127: "VOTER_NOT_FOUND",
                -1: "UNKNOWN_SERVER_ERROR"}
_RETRIABLE = {"NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT", "NOT_CONTROLLER", "NO_ANSWER"}


class VoterChangeError(StepFailed):
    """Kafka refused (or did not answer) a voter change or an unregistration; ``error`` is Kafka's error name
    (``NO_ANSWER`` when none came), ``retriable`` when re-reading and trying again later can succeed."""

    def __init__(self, message: str, error: str):
        super().__init__(message)
        self.error = error
        self.retriable = error in _RETRIABLE


# ------------------------------------------------------------------ directory ids
def kafka_uuid(value: uuid.UUID | None) -> str | None:
    """A UUID as Kafka prints it (``Uuid.toString``: URL-safe base64 without padding).

    >>> kafka_uuid(uuid.UUID(int=0)), kafka_uuid(uuid.UUID("a6a8e6df-3e64-4f98-93f6-26eb1ddd9a63"))
    ('AAAAAAAAAAAAAAAAAAAAAA', 'pqjm3z5kT5iT9ibrHd2aYw')
    """
    return None if value is None else encode_uuid(value.bytes)


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The UUID Kafka prints as ``text`` (BadInput when it is none).

    >>> parse_kafka_uuid("pqjm3z5kT5iT9ibrHd2aYw")
    UUID('a6a8e6df-3e64-4f98-93f6-26eb1ddd9a63')
    """
    try:
        raw = base64.urlsafe_b64decode(text.strip() + "==")
        if len(raw) != 16:
            raise ValueError(len(raw))
        return uuid.UUID(bytes=raw)
    except Exception:
        raise BadInput(f"directory id {text!r} is not a Kafka id (22 characters of URL-safe base64, as "
                       "meta.properties' directory.id)") from None


# ------------------------------------------------------------------ reads
def _describe_quorum(address: str, settings: ClientSettings | None, timeout_s: float) -> tuple[dict | None, str | None]:
    """DescribeQuorum v2 at ``address``: (answer, None) from the leader, (None, error name) from a controller that is
    not, (None, None) when it does not answer."""
    from kafka.protocol.admin.cluster import DescribeQuorumRequest

    topic = DescribeQuorumRequest.TopicData
    request = DescribeQuorumRequest(topics=[topic(topic_name="__cluster_metadata",
                                                  partitions=[topic.PartitionData(partition_index=0)])])
    answer = _ask_controller(address, request, DESCRIBE_QUORUM_VERSION, timeout_s, settings)
    if answer is None:
        return None, None
    part = answer["topics"][0]["partitions"][0]
    code = answer.get("error_code") or part.get("error_code")
    if code:
        return None, _ERROR_NAMES.get(code, str(code))
    return answer, None


def describe_cluster_controllers(address: str, settings: ClientSettings | None = None,
                                 timeout_s: float = 5.0) -> dict | None:
    """DescribeCluster (controller endpoints, KIP-919) at the controller at ``address``: ``{"cluster_id",
    "active_id" (None when unknown), "controllers": {id: "host:port"}}``, or None when it does not answer."""
    from kafka.protocol.admin.cluster import DescribeClusterRequest

    request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=CONTROLLER_ENDPOINTS)
    answer = _ask_controller(address, request, DESCRIBE_CLUSTER_VERSION, timeout_s, settings)
    if answer is None or answer.get("error_code"):
        if answer is not None:
            log.debug("DescribeCluster at %s: error %s", address, answer.get("error_code"))
        return None
    active = answer.get("controller_id")
    controllers = {int(b["broker_id"]): Endpoint("", str(b["host"]), int(b["port"])).address
                   for b in answer.get("brokers") or []}
    return {"cluster_id": answer.get("cluster_id"), "active_id": None if active is None or active < 0 else int(active),
            "controllers": controllers}


def find_leader(addresses: Sequence[str], settings: ClientSettings | None = None,
                timeout_s: float = 5.0, not_leaders: list[str] | None = None) -> tuple[str, dict] | None:
    """The leader's address and its DescribeQuorum v2 answer (as kafka-python decodes it: read it with
    :func:`~migrate.core.controllers.quorum.quorum_from_answer`), found among
    ``addresses`` or through DescribeCluster at any of them; None when no leader answers (``not_leaders``, when
    given, gets the addresses that answered as controllers that do not lead)."""
    tried: set[str] = set()
    for address in addresses:
        tried.add(address)
        answer, error = _describe_quorum(address, settings, timeout_s)
        if answer is not None:
            return address, answer
        if error is not None and not_leaders is not None:
            not_leaders.append(address)
        log.debug("DescribeQuorum at %s: %s", address, error or "no answer")
    for address in addresses:
        cluster = describe_cluster_controllers(address, settings, timeout_s)
        if cluster is None:
            continue
        active = cluster["active_id"]
        ordered = sorted(cluster["controllers"].items(), key=lambda kv: kv[0] != active)
        for _id, other in ordered:
            if other in tried:
                continue
            tried.add(other)
            answer, _error = _describe_quorum(other, settings, timeout_s)
            if answer is not None:
                return other, answer
    return None


def read_quorum(addresses: Sequence[str], settings: ClientSettings | None = None,
                timeout_s: float = 5.0) -> tuple[str, Quorum]:
    """The leader's address and the quorum it describes; StepFailed when no controller of ``addresses`` leads or
    knows the leader."""
    not_leaders: list[str] = []
    found = find_leader(addresses, settings, timeout_s, not_leaders)
    if found is None and not_leaders:
        raise StepFailed(f"DescribeQuorum at {', '.join(not_leaders)}: not the leader, and no controller named "
                         "the active one (DescribeCluster lists only registered controllers: one started as an "
                         "observer of a static quorum stayed unregistered until restarted, seen on Kafka 4.1.2): give "
                         "every controller's listener in --bootstrap-controller, or restart the unregistered ones")
    if found is None:
        raise StepFailed(f"no KRaft leader answered DescribeQuorum at {', '.join(addresses)} (nor did DescribeCluster "
                         "name one): check --bootstrap-controller (the controllers' controller listener) and that a "
                         "majority of the voters runs")
    return found[0], quorum_from_answer(found[1])


def controller_features(address: str, settings: ClientSettings | None = None,
                        timeout_s: float = 5.0) -> dict | None:
    """ApiVersions (v3+) of the controller at ``address``: ``{"finalized": {name: max level}, "supported": {name:
    (min, max)}}`` (``kraft.version`` and ``metadata.version`` among them), or None when it does not answer."""
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    request = ApiVersionsRequest(client_software_name="kmigrate", client_software_version="1")
    answer = _ask_controller(address, request, 3, timeout_s, settings)
    if answer is None or answer.get("error_code"):
        return None
    return {"finalized": {f["name"]: int(f["max_version_level"]) for f in answer.get("finalized_features") or []},
            "supported": {f["name"]: (int(f["min_version"]), int(f["max_version"]))
                          for f in answer.get("supported_features") or []}}


def kraft_version(address: str, settings: ClientSettings | None = None, timeout_s: float = 5.0) -> int | None:
    """The finalized ``kraft.version`` the controller at ``address`` reports (0 when not finalized: a static quorum),
    None when it does not answer. Re-read it before every voter change (KAFKA-18979: a release upgrade can bump it)."""
    features = controller_features(address, settings, timeout_s)
    if features is None:
        return None
    return features["finalized"].get(KRAFT_VERSION, 0)


# ------------------------------------------------------------------ changes
def _explain(error: str, message: str | None, what: str) -> str:
    detail = f" ({message})" if message else ""
    return {
        "DUPLICATE_VOTER": f"{what}: it is already a voter{detail}: re-read the quorum, there is nothing to add",
        "VOTER_NOT_FOUND": f"{what}: it is not a voter with that directory id{detail}: re-read the quorum (already "
                           "removed, or formatted again since)",
        "REQUEST_TIMED_OUT": f"{what}: the leader did not complete it in time{detail}: another voter change may still "
                             "be in flight, or the new controller did not answer the leader; re-read the quorum and "
                             "try again",
        "NOT_LEADER_OR_FOLLOWER": f"{what}: the controller asked is not the leader any more{detail}: re-read the "
                                  "quorum and try again",
        "NOT_CONTROLLER": f"{what}: the controller asked is not the active controller{detail}: re-read and try again",
        "INVALID_REQUEST": f"{what}: Kafka refused the request{detail}: check the controller's listener name and "
                           "endpoint (the leader reaches it there), and that it runs a Kafka that supports the "
                           "finalized kraft.version",
        "INCONSISTENT_CLUSTER_ID": f"{what}: the cluster id does not match the quorum's{detail}",
        "CLUSTER_AUTHORIZATION_FAILED": f"{what}: kmigrate's principal lacks ALTER on the cluster{detail}: grant it "
                                        "or use --controller-command-config with an admin principal",
        "BROKER_ID_NOT_REGISTERED": f"{what}: no such broker is registered{detail}",
        "NO_ANSWER": f"{what}: no answer came: the change may or may not have happened; re-read the quorum before "
                     "anything else",
    }.get(error, f"{what}: Kafka answered {error}{detail}")


def _change(addresses: Sequence[str], request, what: str, settings: ClientSettings | None, timeout_s: float,
            leader: str | None = None) -> None:
    target = leader
    if target is None:
        found = find_leader(addresses, settings, min(timeout_s, 5.0))
        if found is None:
            raise VoterChangeError(f"{what}: no leader found at {', '.join(addresses)}: re-read the quorum and try "
                                   "again", "NOT_LEADER_OR_FOLLOWER")
        target = found[0]
    answer = _ask_controller(target, request, 0, timeout_s + 5.0, settings)
    if answer is None:
        raise VoterChangeError(_explain("NO_ANSWER", None, what), "NO_ANSWER")
    code = int(answer.get("error_code") or 0)
    if code == 0:
        return
    error = _ERROR_NAMES.get(code, f"error {code}")
    message = answer.get("error_message")
    if error == "UNSUPPORTED_VERSION":
        raise BadInput(f"{what}: the quorum is static (Kafka: {message or 'UNSUPPORTED_VERSION'}): voters change only in "
                       "a dynamic quorum (kraft.version 1); on Kafka 4.1+ upgrade kraft.version, on 3.9/4.0 move to a "
                       "new KRaft cluster with kmigrate mirror")
    raise VoterChangeError(_explain(error, message, what), error)


def add_voter(addresses: Sequence[str], node_id: int, directory_id: str, endpoint: Endpoint, *,
              settings: ClientSettings | None = None, cluster_id: str | None = None,
              timeout_s: float = DEFAULT_CHANGE_TIMEOUT_S, leader: str | None = None) -> None:
    """AddRaftVoter: make observer ``node_id`` (its directory ``directory_id``) a voter reachable at ``endpoint``
    (the controller listener's name, host and port). Returns once the leader answered (the new voter set committed);
    VoterChangeError / BadInput otherwise. ``leader``: the leader's address when just read (else found again)."""
    from migrate.adapters.kafka.messages import AddRaftVoterRequest

    request = AddRaftVoterRequest(
        cluster_id=cluster_id, timeout_ms=int(timeout_s * 1000), voter_id=node_id,
        voter_directory_id=parse_kafka_uuid(directory_id),
        listeners=[AddRaftVoterRequest.Listener(name=endpoint.name, host=endpoint.host, port=endpoint.port)])
    _change(addresses, request, f"adding controller {node_id} to the voters", settings, timeout_s, leader)


def remove_voter(addresses: Sequence[str], node_id: int, directory_id: str, *,
                 settings: ClientSettings | None = None, cluster_id: str | None = None,
                 timeout_s: float = DEFAULT_CHANGE_TIMEOUT_S, leader: str | None = None) -> None:
    """RemoveRaftVoter: take voter ``node_id`` (its directory ``directory_id``) out of the voters. A leader that
    removes itself answers, then resigns."""
    from migrate.adapters.kafka.messages import RemoveRaftVoterRequest

    request = RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=node_id,
                                     voter_directory_id=parse_kafka_uuid(directory_id))
    _change(addresses, request, f"removing controller {node_id} from the voters", settings, timeout_s, leader)


def unregister_broker(addresses: Sequence[str], broker_id: int, *, settings: ClientSettings | None = None,
                      timeout_s: float = 15.0, leader: str | None = None) -> None:
    """UnregisterBroker at the active controller: retire broker ``broker_id``'s registration (a stopped broker's: a
    stale registration blocks the next metadata.version upgrade). BROKER_ID_NOT_REGISTERED means already done."""
    from migrate.adapters.kafka.messages import UnregisterBrokerRequest

    _change(addresses, UnregisterBrokerRequest(broker_id=broker_id), f"unregistering broker {broker_id}", settings,
            timeout_s, leader)


# ------------------------------------------------------------------ kraft.version: static to dynamic (Kafka 4.1+)
UPDATE_FEATURES_VERSION = 1  # UpgradeType and ValidateOnly, and a result per feature (v2 drops those results)
UPGRADE = 1  # UpdateFeatures' UpgradeType: an upgrade only (2 and 3 are downgrades)


def _error_name(code: int) -> str:
    import kafka.errors as Errors

    name = getattr(Errors.for_code(code), "message", None)
    return name if name and name != "UNKNOWN" else _ERROR_NAMES.get(code, f"error {code}")


class FeatureUpdateError(StepFailed):
    """Kafka refused (or did not answer) UpdateFeatures; ``error`` is Kafka's error name (``NO_ANSWER`` when none
    came), ``retriable`` when re-reading and sending again can succeed (another controller became active)."""

    def __init__(self, message: str, error: str):
        super().__init__(message)
        self.error = error
        self.retriable = error in _RETRIABLE


def upgrade_kraft_version(leader: str, *, settings: ClientSettings | None = None, timeout_s: float = 30.0,
                          validate_only: bool = False) -> None:
    """UpdateFeatures ``kraft.version=1`` (an upgrade) to the active controller at ``leader`` (its controller
    listener): Kafka 4.1+ turns a static quorum into a dynamic one (KAFKA-16538). Returns once the controller
    accepted it; FeatureUpdateError otherwise. A lost answer may hide a done upgrade: the caller reads
    ``kraft.version`` again before anything else."""
    from kafka.protocol.admin.cluster import UpdateFeaturesRequest

    key = UpdateFeaturesRequest.FeatureUpdateKey(feature=KRAFT_VERSION, max_version_level=1, allow_downgrade=False,
                                                 upgrade_type=UPGRADE)
    request = UpdateFeaturesRequest(timeout_ms=int(timeout_s * 1000), feature_updates=[key], validate_only=validate_only)
    answer = _ask_controller(leader, request, UPDATE_FEATURES_VERSION, timeout_s + 5.0, settings)
    what = f"upgrading {KRAFT_VERSION} to 1 at the controller at {leader}"
    if answer is None:
        raise FeatureUpdateError(f"{what}: no answer came: it may or may not have happened; read {KRAFT_VERSION} "
                                 "again before anything else", "NO_ANSWER")
    found = [(answer.get("error_code"), answer.get("error_message"))]
    found += [(r.get("error_code"), r.get("error_message")) for r in answer.get("results") or []]
    for code, message in found:
        if code:
            error = _error_name(int(code))
            detail = f" ({message})" if message and message != "NONE" else ""
            raise FeatureUpdateError(f"{what}: Kafka answered {error}{detail}", error)


def broker_finalized_features(settings: ClientSettings, timeout_s: float = 10.0) -> dict[str, int] | None:
    """The finalized features (name: level) a broker of ``settings`` reports (kafka-python's ``describe_features``:
    ApiVersions), ``kraft.version`` 0 when it reports none; None when no broker answers."""
    from migrate.adapters.kafka.client import kafka_python_admin

    try:
        with kafka_python_admin(settings, timeout_s, "kmigrate-kraft") as client:
            features = client.describe_features()
    except Exception as exc:  # unreachable, or a login refused: the caller says what it could not read
        log.debug("DescribeFeatures through %s failed: %s", settings.bootstrap_servers, exc)
        return None
    out = {name: int(f["finalized"][1]) for name, f in features.items() if f.get("finalized")}
    out.setdefault(KRAFT_VERSION, 0)
    return out


@dataclass(frozen=True)
class ControllerView:
    """One look at the controllers for the planner: the leader's address, its quorum, the finalized kraft.version."""

    leader: str
    quorum: Quorum
    kraft_version: int | None


def read_controllers(addresses: Sequence[str], settings: ClientSettings | None = None,
                     timeout_s: float = 5.0) -> ControllerView:
    """The quorum (from the leader) and the finalized ``kraft.version`` (asked of the leader too)."""
    leader, quorum = read_quorum(addresses, settings, timeout_s)
    return ControllerView(leader, quorum, kraft_version(leader, settings, timeout_s))
