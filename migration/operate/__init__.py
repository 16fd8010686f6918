"""Driving a real Apache Kafka cluster's own migration from ZooKeeper to KRaft, as an
operator would by hand: the cluster described in an inventory
(:mod:`~migration.operate.inventory`), the migration laid out as concrete steps
(:mod:`~migration.operate.plan`), each properties file's change worked out as the
operator would make it (:mod:`~migration.operate.edits`)."""
