"""The demo's orchestration (``zk2kraft demo``, ``make demo``): the whole migration told
on local processes, step by step. :mod:`.story` on zk2kraft's own brokers and
controllers (a seeded cluster, the preflight, a dry-run copy, then :mod:`.live`'s
migration to DUAL_WRITE and :mod:`.finish`'s brokers rolled into KRaft mode, finalization
or the way back); :mod:`.kafka_story` on real Apache Kafka processes driven by
:mod:`migration.operate`'s run.

Development only, and a layer of its own just below :mod:`migration.cli`: it runs
:mod:`migration.rehearse`'s procedure and :mod:`migration.operate`'s runner, which sit
above :mod:`migration.local`. It prints nothing itself: everything it shows goes through
the :class:`~.view.DemoView` the command supplies (:mod:`migration.cli.demo`)."""
