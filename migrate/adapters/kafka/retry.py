"""Which Kafka errors are worth another try (a controller moved, a timeout, a broker not ready yet), and the
named retry policy of the partition mover's admin calls."""

from __future__ import annotations

import tenacity


def transient_error(exc: BaseException) -> bool:
    """Errors worth another try: controller moved, timeouts, a broker not ready yet."""
    import kafka.errors as kerr
    from confluent_kafka import KafkaException

    names = ("NotControllerError", "RequestTimedOutError", "KafkaTimeoutError", "NodeNotReadyError",
             "KafkaConnectionError", "NoBrokersAvailable", "LeaderNotAvailableError")
    if isinstance(exc, tuple(getattr(kerr, n) for n in names if hasattr(kerr, n))):
        return True
    if isinstance(exc, KafkaException):
        from confluent_kafka import KafkaError

        err = exc.args[0] if exc.args else None
        # a request that timed out (a broker died under it) is worth another, to another broker
        local = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT)
        if isinstance(err, KafkaError) and err.code() in local:
            return True
        return bool(getattr(err, "retriable", lambda: False)())
    return False


ADMIN_RETRY = tenacity.retry(
    retry=tenacity.retry_if_exception(transient_error),
    stop=tenacity.stop_after_attempt(5),
    wait=tenacity.wait_exponential(multiplier=0.5, max=5),
    reraise=True,
)
"""Named retry policy for admin calls of the partition mover (transient errors only, 5 tries)."""
