"""Issue 17 (demo --cross-cluster, its first piece): a canary with a consumer group pauses (producer
stopped and drained, its group's offsets committed) and resumes from the group's committed offsets,
the way its clients go on on another cluster after ``mirror cutover`` translated those offsets.
Records read again count as duplicated; none acknowledged is lost. One lean sandbox (1 ZooKeeper, 1 broker).
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from migrate.files import client_settings
from migrate.runner.canary import Canary
from cluster_waits import wait_for

pytestmark = pytest.mark.integration

SANDBOX = dict(zookeeper_ids=(1,), broker_ids=(1,))
REWIND = 20


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        consumer.close()


def rewind(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """What a translation onto another cluster may do: the group's offset set earlier than its position."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_paused_canary_commits_and_resumes_from_its_group_counting_records_read_again(cluster, topic_name):
    bootstrap = cluster.bootstrap_servers()
    group = f"canary-{uuid.uuid4().hex[:6]}"
    canary = Canary(client_settings(bootstrap, None), topic=topic_name, rate_per_s=100, replication_factor=1,
                    min_insync_replicas=1, group=group).start()
    wait_for(lambda: (r := canary.report()).acknowledged >= 200 and r.consumed >= 200,
             what="the canary's first 200 records acknowledged and read back", timeout_s=60, interval_s=0.2)
    paused = canary.pause(drain_timeout_s=30)
    assert paused.acknowledged > 100 and paused.consumed == paused.acknowledged, paused
    end = committed(bootstrap, group, topic_name)
    assert end > paused.consumed  # the warm-up record and this run's records were all read and committed
    rewind(bootstrap, group, topic_name, end - REWIND)

    canary.resume()
    wait_for(lambda: (r := canary.report()).sent >= paused.sent + 200 and r.duplicated >= REWIND,
             what="the resumed canary's next 200 records sent and the rewound ones read again", timeout_s=60,
             interval_s=0.2)
    final = canary.stop(drain_timeout_s=30)
    assert final.sent > paused.sent + 100, (paused, final)  # the producer went on with the next numbers
    assert final.lost == 0 and final.failed_sends == 0, final
    assert final.duplicated == REWIND, final  # exactly the records the rewound offset read again
    # the ledger counts a record read again below the highest read as out of order too
    assert final.out_of_order <= REWIND and final.ok, final
    assert committed(bootstrap, group, topic_name) > end
