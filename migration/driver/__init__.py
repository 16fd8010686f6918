"""The migration driver (Kafka's KRaftMigrationDriver): on the active controller, the state
machine from ZooKeeper to KRaft -- readiness, the claim, the copy in ONE transaction, the
dual-write's accounting, broker RPCs, finalization. Sees the quorum controller through
:mod:`controller_port` and ZooKeeper through :mod:`migration.bridge`; imports
:mod:`migration.zkcontroller`, :mod:`migration.controller` and below."""
