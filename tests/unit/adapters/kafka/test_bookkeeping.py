"""The bookkeeping topic's writer settings (adapters/bookkeeping.py)."""

from __future__ import annotations


def test_the_bookkeeping_writer_keeps_one_request_in_flight_whatever_the_client_settings():
    # With several requests in flight, librdkafka counted records of failed requests to a just-created
    # topic as "implicitly acked" by a later success: a write-ahead record acknowledged and not in the log.
    from migrate.adapters.kafka.bookkeeping import BookkeepingTopic
    from migrate.core.clientconfig import ClientSettings

    user = ClientSettings("b:9092", {"max.in.flight.requests.per.connection": "5", "acks": "1",
                                     "security.protocol": "SASL_SSL"})
    conf = BookkeepingTopic(user, "__kmigrate_migration").producer_settings()
    assert conf["max.in.flight.requests.per.connection"] == 1
    assert conf["enable.idempotence"] is True and conf["acks"] == "all"
    assert conf["security.protocol"] == "SASL_SSL" and conf["bootstrap.servers"] == "b:9092"
