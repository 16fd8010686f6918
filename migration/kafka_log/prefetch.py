"""Transcoding a large Kafka file's batches on a second core, ahead of the replay.

Reading Kafka's format costs Python work the project's own format does not (record
framing and field-by-field transcoding, :mod:`.transcode`); for a file of at least
:data:`PARALLEL_BYTES` a worker process does it for the next batches while the caller
parses and replays the current ones, so replaying a Kafka snapshot of a million
partitions takes about as long as replaying the project's own log.

Contract: :func:`payloads` yields ``(batch, payload, skipped)`` for every batch in
order -- exactly what :func:`~migration.kafka_log.files.transcode` gives, from
whichever process made it; an error stops the iteration where the serial read would
have stopped, with the same CorruptLogError. At most :data:`AHEAD` chunks of about
:data:`CHUNK_BYTES` wait in memory. The worker is a fresh (spawned) interpreter: it
shares no threads or locks with the caller, and it is gone when the iteration ends or
is abandoned.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from migration.kafka_log.files import BatchAt, ScannedFile, map_file, transcode

PARALLEL_BYTES = 32 << 20
CHUNK_BYTES = 4 << 20
AHEAD = 3

Transcoded = tuple[BatchAt, bytes, list[str]]


def _chunks(batches: list[BatchAt]) -> Iterator[list[BatchAt]]:
    chunk: list[BatchAt] = []
    size = 0
    for at in batches:
        chunk.append(at)
        size += at.header.size
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _transcode_chunk(path: Path, chunk: list[BatchAt], skip_unknown: bool) -> list[Transcoded]:
    """In the worker: map the file and transcode ``chunk``'s batches."""
    file = ScannedFile(path, map_file(path))
    try:
        out = []
        for at in chunk:
            skipped: list[str] = []
            out.append((at, transcode(file, at, skipped if skip_unknown else None), skipped))
        return out
    finally:
        file.close()


def payloads(file: ScannedFile, batches: list[BatchAt], skip_unknown: bool) -> Iterator[Transcoded]:
    """Every batch of ``batches`` (of ``file``) transcoded, in order."""
    if sum(at.header.size for at in batches) < PARALLEL_BYTES:
        for at in batches:
            skipped: list[str] = []
            yield at, transcode(file, at, skipped if skip_unknown else None), skipped
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        pending: deque[Future[list[Transcoded]]] = deque()
        chunks = _chunks(batches)
        try:
            for chunk in chunks:
                pending.append(pool.submit(_transcode_chunk, file.path, chunk, skip_unknown))
                if len(pending) >= AHEAD:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
