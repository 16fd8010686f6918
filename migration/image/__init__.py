"""The metadata image: immutable state built by replaying records, the deltas between
images, and the transaction-aware loader that publishes them. Imports
:mod:`migration.log`, :mod:`migration.records`, :mod:`migration.observability`,
:mod:`migration.common`."""
