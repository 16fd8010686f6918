"""The chaos suite's linearizability checker (tests/chaos/history.py) on hand-written
histories: linearizable ones with overlapping and unknown operations, and ones that are
not, each with the fewest offending operations it names."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from tests.chaos.__main__ import faults_by_kind, history_verdict
from tests.chaos.faults import INJECTED
from tests.chaos.history import as_of, check, cut, linearizable
from tests.chaos.history import main as history_main
from tests.chaos.history_models import (
    ABSENT,
    ERROR,
    LINEARIZABLE,
    MODELS,
    NO_EFFECT,
    NOT_LINEARIZABLE,
    OK,
    READ,
    READ_AT_LEAST,
    REVEALING,
    UNDECIDED,
    UNKNOWN,
    Op,
)
from tests.chaos.reads import NothingMatchedError, outcome, refused
from tests.chaos.workload import Entity, Ledger, Workload, config_value, topic_partitions
from tests.zk_timeline import Timeline, topic_config

_ids = itertools.count(1)


def op(
    f: str,
    value: Any,
    invoke: float,
    complete: float | None,
    result: str = OK,
    *,
    kind: str = "register",
    key: str = "k",
    error: str = "",
    stale: bool = False,
    phase: str = "dual-write",
) -> Op:
    if complete is None and result == OK:
        result = UNKNOWN
    return Op(next(_ids), key, kind, f, value, result, invoke, complete, error, stale, phase)


def verdict(ops: list[Op], final: Any = None) -> tuple[str, list[Op]]:
    report = check("KRaft", ops, {} if final is None else {ops[0].key: final})
    (key,) = report.keys
    return key.verdict, key.witness


def test_overlapping_writes_and_reads_admit_an_order() -> None:
    w1 = op("set", "1", 0, 10)
    w2 = op("set", "2", 1, 3)
    r2 = op(READ, "2", 4, 5)
    r1 = op(READ, "1", 6, 7)  # w1 lands after r2: it was still in flight
    assert verdict([w1, w2, r2, r1], final="1") == (LINEARIZABLE, [])
    assert verdict([w1, w2, r2, r1], final="2")[0] == NOT_LINEARIZABLE  # w1 is before r1


def test_an_unknown_write_may_land_at_any_time_after_its_invoke_or_never() -> None:
    w1 = op("set", "1", 0, 1)
    lost = op("set", "2", 2, None)  # timed out
    assert verdict([w1, lost, op(READ, "1", 3, 4)], final="1")[0] == LINEARIZABLE  # never
    assert verdict([w1, lost, op(READ, "2", 3, 4)], final="2")[0] == LINEARIZABLE  # landed
    late = [w1, lost, op("set", "3", 5, 6)]  # landed after a later acknowledged write
    assert verdict(late, final="2")[0] == LINEARIZABLE
    assert verdict(late, final="1")[0] == NOT_LINEARIZABLE
    # seen landed before the later write, it cannot land again after it
    landed = [w1, lost, op(READ, "2", 3, 4), op("set", "3", 5, 6)]
    assert verdict(landed, final="3")[0] == LINEARIZABLE
    v, shown = verdict(landed, final="2")  # only w1 says it held no "2" before
    assert v == NOT_LINEARIZABLE and [o.id for o in shown] == [o.id for o in landed] + [-1]


def test_a_stale_read_after_an_acknowledged_write_is_not_linearizable() -> None:
    w1, w2 = op("set", "1", 0, 1), op("set", "2", 2, 3)
    read = op(READ, "1", 4, 5)  # began after w2 completed
    v, shown = verdict([w1, w2, read])
    assert v == NOT_LINEARIZABLE and shown == [w2, read]
    # a broker's view may lag: stale reads observe some earlier state
    view = op(READ, "1", 4, 5, stale=True)
    assert verdict([w1, w2, view], final="2")[0] == LINEARIZABLE
    assert verdict([w1, w2, op(READ, "9", 4, 5, stale=True)])[0] == NOT_LINEARIZABLE  # never held


def test_a_lost_acknowledged_write_in_the_final_state_is_not_linearizable() -> None:
    history = [op("set", "1", 0, 1), op(READ, "1", 2, 3), op("set", "2", 4, 5)]
    v, shown = verdict(history, final="1")
    assert v == NOT_LINEARIZABLE
    assert [o.id for o in shown] == [history[2].id, -1]  # the write, the final read
    assert shown[-1].f == READ and shown[-1].value == "1"
    deleted = [op("set", "1", 0, 1), op("delete", None, 2, 3)]
    assert verdict(deleted, final=ABSENT)[0] == LINEARIZABLE
    assert verdict(deleted, final="1")[0] == NOT_LINEARIZABLE


def test_a_create_acknowledged_twice_without_a_delete_between_is_not_linearizable() -> None:
    first = op("create", 3, 0, 1, kind="topic")
    second = op("create", 3, 2, 3, kind="topic")
    v, shown = verdict([first, second, op("create-partitions", 4, 4, 5, kind="topic")], final=4)
    assert v == NOT_LINEARIZABLE and shown == [first, second]
    between = [first, op("delete", None, 1.5, 1.8, kind="topic"), second]
    assert verdict(between, final=3)[0] == LINEARIZABLE
    # acknowledged writes are not observations: a broker's view does not weaken them
    again = op("create", 3, 4, 5, kind="topic", stale=True)
    v, shown = verdict(
        [first, op("delete", None, 2, 3, kind="topic", stale=True), again], final=ABSENT
    )
    assert v == NOT_LINEARIZABLE and [o.id for o in shown] == [again.id, -1]
    # concurrent with an unknown delete: it may have landed between them
    unsure = [first, op("delete", None, 0.5, None, kind="topic"), second]
    assert verdict(unsure, final=3)[0] == LINEARIZABLE


def test_errors_that_reveal_the_state_are_observations() -> None:
    created = op("create", 2, 0, 1, kind="topic")
    # INVALID_PARTITIONS for 4: it has 4 or more, so the request's own first attempt landed
    invalid = op("create-partitions", 4, 2, 3, ERROR, kind="topic", error="INVALID_PARTITIONS")
    assert verdict([created, invalid], final=4)[0] == LINEARIZABLE
    v, shown = verdict([created, invalid], final=2)  # 4 or more, then 2
    assert v == NOT_LINEARIZABLE and [o.id for o in shown] == [invalid.id, -1]
    # TOPIC_ALREADY_EXISTS for a name only this create used: it landed, nothing deleted it
    exists = op("create", 1, 0, 1, ERROR, kind="topic", error="TOPIC_ALREADY_EXISTS")
    assert verdict([exists], final=1)[0] == LINEARIZABLE
    assert verdict([exists], final=ABSENT)[0] == NOT_LINEARIZABLE
    # UNKNOWN_TOPIC_OR_PARTITION from a broker's view may be from before the create
    gone = op("delete", None, 2, 3, ERROR, kind="topic", error="UNKNOWN_TOPIC_OR_PARTITION")
    assert verdict([created, gone], final=2)[0] == NOT_LINEARIZABLE
    stale = op(
        "delete", None, 2, 3, ERROR, kind="topic", error="UNKNOWN_TOPIC_OR_PARTITION", stale=True
    )
    assert verdict([created, stale], final=2)[0] == LINEARIZABLE
    # an error that reveals nothing: the request may have landed, or not
    refused = op("set", "2", 2, 3, ERROR, error="NOT_CONTROLLER")
    for final in ("1", "2"):
        assert verdict([op("set", "1", 0, 1), refused], final=final)[0] == LINEARIZABLE


def test_a_refusal_decided_from_the_request_alone_had_no_effect() -> None:
    assert {"INVALID_CONFIG", "POLICY_VIOLATION", "INVALID_REQUEST"} <= NO_EFFECT
    assert "UNSUPPORTED_VERSION" in NO_EFFECT and "NOT_CONTROLLER" not in NO_EFFECT
    assert not NO_EFFECT & REVEALING
    for error in sorted(NO_EFFECT):
        refused = op("set", "2", 2, 3, ERROR, error=error)
        assert verdict([op("set", "1", 0, 1), refused], final="1")[0] == LINEARIZABLE
        v, shown = verdict([op("set", "1", 0, 1), refused], final="2")  # it never lands
        assert v == NOT_LINEARIZABLE and shown[-1].id == -1
    topic = op("create", 2, 0, 1, ERROR, kind="topic", error="POLICY_VIOLATION")
    assert verdict([topic], final=ABSENT)[0] == LINEARIZABLE
    assert verdict([topic], final=2)[0] == NOT_LINEARIZABLE
    # an unknown write stays unbounded: it may land long after a later acknowledged one
    late = [op("set", "1", 0, None), op("set", "2", 100, 101), op(READ, "1", 500, 501)]
    assert verdict(late, final="1")[0] == LINEARIZABLE


def test_the_ledger_keeps_no_value_a_definite_refusal_asked_for() -> None:
    workload = Workload("127.0.0.1:1", 1, lambda: "copy")
    entity = Entity("config", config_value(2, "kept", "retention.ms"), "1000")

    def refuse(code: int) -> Callable[[], None]:
        def call() -> None:
            raise refused(code, "no")

        return call

    workload._apply("topic-config", entity, ("set", "2000"), "2000", refuse(40))  # INVALID_CONFIG
    assert not entity.landing and entity.expected == "1000"
    workload._apply("topic-config", entity, ("set", "3000"), "3000", refuse(41))  # NOT_CONTROLLER
    assert entity.landing == ("3000",)
    topic = Entity("topic:t", topic_partitions("t"), ABSENT, model="topic")
    workload._apply("create-topic", topic, ("create", 3), 3, refuse(44))  # POLICY_VIOLATION
    assert not topic.retired
    assert [o.error for o in workload.ledger.history] == [
        "INVALID_CONFIG", "NOT_CONTROLLER", "POLICY_VIOLATION",
    ]  # fmt: skip


def test_acls_and_scram_credentials() -> None:
    create = op("create", None, 0, 1, kind="acl")
    delete = op("delete", None, 2, 3, kind="acl")
    assert verdict([create, delete], final=False)[0] == LINEARIZABLE
    v, shown = verdict([delete], final=False)  # deleted (matched) one never created
    assert v == NOT_LINEARIZABLE and shown == [delete]
    unmatched = op("delete", None, 2, 3, ERROR, kind="acl", error="NOTHING_MATCHED")
    for final in (True, False):
        assert verdict([create, unmatched], final=final)[0] == LINEARIZABLE
    upsert = op("set", 4096, 0, 1, kind="credential")
    missing = op("delete", None, 2, 3, ERROR, kind="credential", error="RESOURCE_NOT_FOUND")
    assert verdict([upsert, missing], final=ABSENT)[0] == LINEARIZABLE
    assert verdict([upsert, missing], final=4096)[0] == NOT_LINEARIZABLE
    assert verdict([op("delete", None, 0, 1, kind="credential")])[0] == NOT_LINEARIZABLE


def test_the_search_is_bounded_and_says_so() -> None:
    history = [op("set", str(i), 0.0, None) for i in range(14)] + [op(READ, "3", 20, 21)]
    report = check("KRaft", history, {"k": "7"}, budget=500)
    assert report.verdict == UNDECIDED and report.keys[0].verdict == UNDECIDED
    assert report.problems() == [  # undecided is never a pass: a problem of the run
        "history undecided in KRaft: k: 16 ops, the search stopped after 500 configurations"
    ]
    assert report.facts()["undecided_keys"] == ["k"]
    assert check("KRaft", history, {"k": "7"}).verdict == LINEARIZABLE


def test_a_report_names_each_key_and_prints_the_offending_operations() -> None:
    ok = [op("set", "1", 10, 11, key="a"), op("set", "2", 12, 13, key="a")]
    bad = [op("create", 1, 10, 11, kind="topic", key="t")]
    report = check("ZooKeeper", ok + bad, {"a": "2", "t": ABSENT}, t0=10.0)
    facts = report.facts()
    assert (facts["keys"], facts["ops"], facts["verdict"]) == (2, 5, NOT_LINEARIZABLE)
    assert facts["non_linearizable_keys"] == ["t"]
    (line,) = report.problems()
    assert line.startswith("history not linearizable in ZooKeeper: t: ")
    assert f"#{bad[0].id} create 1 -> ok [0.000, 1.000]" in line
    assert "#-1 read 'absent' -> ok [" in line
    assert Op.from_json(bad[0].to_json()) == bad[0]


def test_a_cut_and_a_store_written_until_a_phase() -> None:
    w = op("set", "1", 0, 2)
    r = op(READ, "1", 1, 3)
    assert cut([w, r, op("set", "2", 4, 5)], 2.5) == [w, op_unknown(r)]
    late = op("set", "2", 4, 5, phase="kraft")
    late_read = op(READ, "2", 6, 7, phase="kraft")
    zk = as_of([w, late, late_read], {"dual-write"})
    assert zk == [w, op_unknown(late)]
    assert linearizable(zk, MODELS["register"], ABSENT, 1000)[0]
    assert check("ZooKeeper", zk, {"k": "1"}).verdict == LINEARIZABLE


def op_unknown(o: Op) -> Op:
    return Op(o.id, o.key, o.kind, o.f, o.value, UNKNOWN, o.invoke, None, o.error, o.stale, o.phase)


def test_a_topic_in_a_brokers_view_shows_at_least_some_of_its_partitions() -> None:
    created = op("create", 2, 0, 1, kind="topic")
    grown = op("create-partitions", 4, 2, 3, kind="topic")
    for seen in (ABSENT, 1, 2, 4):  # before the create; mid-way; before the growth; after
        view = op(READ_AT_LEAST, seen, 5, 6, kind="topic", stale=True)
        assert verdict([created, grown, view], final=4)[0] == LINEARIZABLE
    more = op(READ_AT_LEAST, 5, 5, 6, kind="topic", stale=True)  # more than it ever had
    gone = op(READ_AT_LEAST, ABSENT, 5, 6, kind="topic")  # not stale: it exists by then
    for view in (more, gone):
        assert verdict([created, grown, view], final=4)[0] == NOT_LINEARIZABLE


def test_the_clients_results_from_what_its_calls_raised() -> None:
    assert outcome(KafkaException(KafkaError(36))) == (ERROR, "TOPIC_ALREADY_EXISTS")
    assert outcome(KafkaException(KafkaError(3))) == (ERROR, "UNKNOWN_TOPIC_OR_PARTITION")
    assert outcome(KafkaException(KafkaError(-185))) == (UNKNOWN, "_TIMED_OUT")
    assert outcome(KafkaException(KafkaError(7))) == (UNKNOWN, "REQUEST_TIMED_OUT")
    assert outcome(refused(91, "no such user")) == (ERROR, "RESOURCE_NOT_FOUND")
    assert outcome(TimeoutError()) == (UNKNOWN, "TimeoutError")
    assert outcome(NothingMatchedError()) == (ERROR, "NOTHING_MATCHED")


def test_the_offline_check_fails_an_undecided_or_non_linearizable_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def kept(ops: list[Op], final: Any) -> Path:
        root = tmp_path / str(next(_ids))
        root.mkdir()
        lines = [json.dumps(o.to_json()) for o in ops]
        (root / "history.jsonl").write_text("\n".join(lines) + "\n")
        stores = {"KRaft": {"phases": None, "final": {ops[0].key: final}}}
        (root / "history-final.json").write_text(json.dumps(stores))
        return root

    assert history_main([str(kept([op("set", "1", 0, 1)], "1"))]) == 0
    assert history_main([str(kept([op("set", "1", 0, 1)], "2"))]) == 1
    many = [op("set", str(i), 0.0, None) for i in range(14)] + [op(READ, "3", 20, 21)]
    assert history_main([str(kept(many, "7")), "--budget", "500"]) == 1
    assert "history undecided in KRaft: k:" in capsys.readouterr().out


def test_the_summary_names_faults_by_kind_and_the_worst_history_verdict() -> None:
    def record(*kinds: str, **history: str) -> dict[str, Any]:
        faults = [{"kind": k, "stage": "roll"} for k in kinds]
        stores = {s: {"keys": 1, "ops": 2, "verdict": v} for s, v in history.items()}
        return {"plan": {"faults": faults}, "history": stores}

    # a run's events say what it injected: a run that failed early injected less
    planned = record("zk-quorum-loss", "one-way-partition")
    events = [{"t": 1.0, "stage": "copy", "event": INJECTED, "kind": "zk-quorum-loss"},
              {"t": 2.0, "stage": "copy", "event": "SIGSTOP ZooKeeper servers"}]  # fmt: skip
    assert faults_by_kind([{**planned, "events": events}]) == {"zk-quorum-loss": 1}
    assert faults_by_kind([{**planned, "events": []}]) == {}

    records = [
        record("zk-quorum-loss", "kill-active-controller", "zk-quorum-loss", KRaft=LINEARIZABLE),
        record("one-way-partition", KRaft=LINEARIZABLE, ZooKeeper=NOT_LINEARIZABLE),
        record(KRaft=UNDECIDED, ZooKeeper=LINEARIZABLE),
    ]
    assert faults_by_kind(records) == {
        "zk-quorum-loss": 2, "kill-active-controller": 1, "one-way-partition": 1,
    }  # fmt: skip
    assert [history_verdict(r) for r in records] == [LINEARIZABLE, NOT_LINEARIZABLE, UNDECIDED]
    assert history_verdict({"plan": {"faults": []}}) == "not checked"


def test_a_config_key_goes_on_after_an_unacknowledged_set_and_may_hold_its_value() -> None:
    timeline = Timeline()
    timeline.create_topic("kept", [[1, 2]])
    timeline.commit(topic_config("kept", "retention.ms", "2000"))
    entity = Entity("config", config_value(2, "kept", "retention.ms"), "3000", acked_at="roll")
    ledger = Ledger(entities={"config": entity})
    assert ledger.missing(timeline.image) == ["config: holds '2000', acknowledged ('3000',) (roll)"]
    entity.landing = ("2000",)  # a set that timed out before "3000" was acknowledged
    assert ledger.missing(timeline.image) == [] and not entity.retired


def test_histories_recorded_in_real_runs() -> None:
    """Keys from two chaos runs' histories (times from the first op of the run; every
    answer a broker's)."""

    def recorded(key: str, kind: str) -> Any:
        def one(f: str, value: Any, invoke: float, done: float | None, *r: str, **k: Any) -> Op:
            return op(f, value, invoke, done, *r, kind=kind, key=key, stale=True, **k)

        return one

    # seed 7: the partitions request retried after its first attempt landed ("has 4
    # partitions; the new count must be larger, not 4", answered 3.5 s later)
    topic = recorded("topic:chaos-kept-18", "topic")
    retried = [
        topic("create", 3, 6.589, 6.619),
        topic("create-partitions", 4, 44.340, 47.875, ERROR, error="INVALID_PARTITIONS"),
    ]
    assert verdict(retried, final=4)[0] == LINEARIZABLE
    v, shown = verdict(retried, final=3)
    assert v == NOT_LINEARIZABLE and [o.id for o in shown] == [o.id for o in retried] + [-1]
    # seed 17: a partitions request lost with its connection, found landed at the end
    topic = recorded("topic:chaos-doomed-27", "topic")
    lost = [
        topic("create", 2, 6.588, 6.607),
        topic("create-partitions", 4, 13.712, None, error="_TRANSPORT"),
    ]
    for count in (4, 2):
        assert verdict(lost, final=count)[0] == LINEARIZABLE
    assert verdict(lost, final=3)[0] == NOT_LINEARIZABLE
    # seed 17: a quota refused (NOT_CONTROLLER), then set and removed again
    quota = recorded("quota:chaos-quota-7", "register")
    refused_then_set = [
        quota("delete", None, 3.672, 3.684),
        quota("set", 2156991.0, 6.942, 6.951, ERROR, error="NOT_CONTROLLER"),
        quota("set", 2062440.0, 29.889, 30.172),
        quota("delete", None, 43.630, 43.646),
        quota("set", 123257.0, 43.768, 43.799),
    ]
    for rate in (123257.0, 2156991.0):  # as recorded; the refused one landing late
        assert verdict(refused_then_set, final=rate)[0] == LINEARIZABLE
    v, shown = verdict(refused_then_set, final=ABSENT)
    assert v == NOT_LINEARIZABLE and [o.id for o in shown] == [refused_then_set[-1].id, -1]
