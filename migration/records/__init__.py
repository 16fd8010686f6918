"""Metadata records: their kinds and Kafka api keys, Kafka uuids, and the JSON form
that ``zk2kraft log dump --json`` prints (a contract for the audit and the tests)."""
