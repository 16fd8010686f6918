"""The durable metadata log: CRC32C-framed batches in segment files named by base
offset, recovery on open, an in-memory offset index, snapshots, and a directory lock.
Imports :mod:`migration.records` and :mod:`migration.common` only."""
