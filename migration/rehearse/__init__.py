"""Rehearse the migration on a copy of production's metadata, without touching production.

``zk2kraft rehearse`` reads production's ZooKeeper tree once, read-only, loads it into a
local embedded ZooKeeper, and runs the whole procedure an operator would against local
brokers and controllers: the brokers rolled with the migration flag, the copy,
dual-write under load, the audit, a rollback drill, the roll into KRaft mode and
finalization. It measures each step and writes ``report.json`` (a versioned contract,
:mod:`migration.rehearse.report`) and a self-contained ``report.html``
(:mod:`migration.pages.rehearsal`), with an honest estimate of what production will see
(:mod:`migration.rehearse.estimate`): what carries over from this machine, and what does not.
"""
