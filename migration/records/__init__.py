"""Metadata records: their kinds and Kafka api keys, Kafka's codes and versions, uuids,
secrets, and the JSON form that ``zk2kraft log dump --json`` prints (a contract for the
audit and the tests). Imports only :mod:`migration.common` and the generated protos."""
