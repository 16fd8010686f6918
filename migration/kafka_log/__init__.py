"""Kafka's own metadata log: its record batches, records and directory, read and written."""
