"""The testcontainers backend: the same produce/consume round trip against a containerised Kafka.

Runs only where a Docker engine is reachable; elsewhere it skips with the reason, and the process
backend (the sandbox) runs every other integration test.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.docker]


def _docker_reason() -> str | None:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception as exc:  # no engine, no socket, no permission
        return f"no Docker engine reachable ({type(exc).__name__}): the process backend runs the tests"
    return None


@pytest.mark.skipif(_docker_reason() is not None, reason=_docker_reason() or "")
def test_round_trip_on_a_kafka_container():
    from confluent_kafka import Consumer, Producer
    from testcontainers.kafka import KafkaContainer

    with KafkaContainer() as kafka:
        servers = kafka.get_bootstrap_server()
        producer = Producer({"bootstrap.servers": servers, "acks": "all"})
        for i in range(100):
            producer.produce("tc-round-trip", key=str(i).encode(), value=b"v")
        assert producer.flush(60) == 0
        consumer = Consumer({"bootstrap.servers": servers, "group.id": "tc", "auto.offset.reset": "earliest"})
        consumer.subscribe(["tc-round-trip"])
        seen = set()
        for _ in range(60):
            for msg in consumer.consume(100, timeout=1):
                if msg.error() is None:
                    seen.add(msg.key())
            if len(seen) == 100:
                break
        consumer.close()
        assert len(seen) == 100
