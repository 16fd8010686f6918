"""Kafka's ZooKeeper data as typed, immutable values, with exact JSON codecs.

Each module covers one family of znodes and offers, per znode kind, a frozen dataclass,
``parse_*(path, raw_bytes)`` (strict; raises :class:`ZnodeFormatError` naming the path)
and ``render_*(value) -> bytes`` (the compact JSON Kafka writes).
"""
