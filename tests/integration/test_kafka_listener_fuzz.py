"""Length fields fuzzed on live brokers of both modes, on each listener type (PLAINTEXT,
SASL_PLAINTEXT, SSL, SASL_SSL; the SASL ones before and after a login): every frame is
answered or closes its connection, and the broker goes on serving. The frame that killed
brokers before (26 bytes: Metadata v9 claiming 2^32-2 topics) among them, verbatim.
`make fuzz` sends the whole corpus, with more seeds, to both modes."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from migration.common.ports import unused_port
from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually, running_cluster
from tests.kafka_fuzz import LISTENERS, PASSES, Listeners, corpus, fuzz, kraft_broker, send

# The frame of issue 40, byte for byte: Metadata v9, client id "probe", topics claiming
# 2^32-2 entries (the compact-array varint ffffffff0f).
KILLER = bytes.fromhex("000000160003000900000003000570726f626500ffffffff0f00")


@pytest.fixture(scope="module", params=["zookeeper", "kraft"])
def broker(
    request: pytest.FixtureRequest,
    zk_server: EmbeddedZooKeeper,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Listeners, Callable[[], None], Path]]:
    """(listeners, a check that it still serves on each, its log) of a broker in each mode."""
    root = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    listeners = Listeners(root)
    if request.param == "kraft":
        props = {**listeners.props, "listeners": listeners.listeners_property(unused_port())}
        with kraft_broker(root, props) as (process, log):
            serving = listeners.serving(lambda: process.poll() is None)
            eventually(lambda: serving() is None, 60, "the KRaft broker lists itself")
            yield listeners, serving, log
        return
    with running_cluster(zk_server, root, [1], **listeners.props) as (cluster, _):
        child = cluster.brokers[1]
        cluster.reconfigure(listeners=listeners.listeners_property(child.internal_port, child.port))
        cluster.restart(1)
        cluster.wait_ready(90)
        yield listeners, listeners.serving(lambda: cluster.running() == [1]), child.log


@pytest.mark.parametrize("listener", LISTENERS)
def test_the_26_byte_frame_closes_its_connection_and_the_broker_serves_on(
    broker: tuple[Listeners, Callable[[], None], Path], listener: str
) -> None:
    listeners, serving, _ = broker
    for login in (False, True):
        assert send(listeners.connect(listener, login), KILLER) == "closed"
    serving()


@pytest.mark.parametrize(("listener", "login"), PASSES)
def test_fuzzed_length_fields_are_answered_or_closed(
    broker: tuple[Listeners, Callable[[], None], Path], listener: str, login: bool
) -> None:
    """Each listener and login state gets a seeded share of the corpus's mutations here
    (every one on PLAINTEXT), a few thousand frames a mode; make fuzz sends them all."""
    listeners, serving, log = broker
    rng = random.Random(f"{listener}-{login}")
    seeds = corpus(rng)
    sample = seeds if listener == "PLAINTEXT" else rng.sample(seeds, 12)
    tally = fuzz(listeners.connect(listener, login), sample, serving)
    print(f"{listener} login={login}: {tally.frames} frames, {tally.answered} answered, "
          f"{tally.closed} closed")  # fmt: skip
    assert not tally.failures, tally.failures[:5]
    assert tally.frames > 100
    text = log.read_text()
    assert "Traceback" not in text and "memory allocation" not in text
