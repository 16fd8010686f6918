"""The two broker modes: a ZooKeeper-mode broker (``zk_*`` modules: start-up, the
controller election, its metadata cache, admin through ZooKeeper, the inter-broker
control service) and a KRaft-mode broker (``kraft_*``), with the config both read and the
per-step rewrite between them. Imports :mod:`migration.kafka`,
:mod:`migration.zkcontroller`, :mod:`migration.controller` and below."""
