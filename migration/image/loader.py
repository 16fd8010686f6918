"""MetadataLoader: replays committed records into published images, honouring
transactions (KIP-868).

Contract:

- Records outside a transaction are published at the end of each batch
  (:meth:`MetadataLoader.replay_batch`) or by :meth:`MetadataLoader.publish`.
- Records between BeginTransaction and EndTransaction are never visible: End
  publishes all of them at once. AbortTransaction discards them; the image is then
  exactly what it was before Begin (only its ``offset`` moves past the abort).
- Changes made before a Begin are published when the Begin is replayed, so an abort
  never takes them with it.
- A Begin inside a transaction, or an End/Abort outside one, is a
  :class:`TransactionError`: the log is not one this loader can trust.
- A transaction still open at the end of the log (a controller died mid-copy) stays
  unpublished; :attr:`MetadataLoader.open_transaction` tells the next leader to abort it.
- Inside a transaction, each :meth:`MetadataLoader.publish` (the end of a batch, of a
  commit) folds what was replayed since into an unpublished image of the transaction so
  far, so End costs what its last batch holds, not the whole transaction (the migration's
  copy: a million partitions). The change End publishes then carries no delta (a
  full-image change, as after a snapshot) when anything was folded.

Each publication is handed to the ``publish`` hooks as an :class:`ImageChange` (previous
image, new image, delta, manifest), on the loader's thread: the hooks must be quick
(:class:`~migration.image.publishing.PublisherThread` moves real work off it). Not
thread-safe: one thread replays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from migration.common.gc_pause import gc_paused
from migration.common.text import shown
from migration.image.delta import MetadataDelta, RecordApplyError
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.log.batch import LogBatch
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import KINDS

PublishHook = Callable[[ImageChange], None]


class TransactionError(RecordApplyError):
    """Transaction markers out of order (nested Begin, End or Abort without Begin)."""


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    name: str
    begin_offset: int


class MetadataLoader:
    def __init__(
        self, image: MetadataImage = MetadataImage.EMPTY, hooks: Iterable[PublishHook] = ()
    ) -> None:
        self._image = image
        self._delta: MetadataDelta | None = None
        self._delta_first = image.offset + 1
        self._folded: MetadataImage | None = None  # an open transaction's image so far
        self.hooks = list(hooks)
        self.open_transaction: OpenTransaction | None = None
        self.last_offset = image.offset

    @classmethod
    def from_snapshot(
        cls,
        records: Iterable[MetadataRecord],
        end_offset: int,
        epoch: int,
        hooks: Iterable[PublishHook] = (),
    ) -> MetadataLoader:
        """A loader whose image is a snapshot's (covering offsets below ``end_offset``)."""
        delta = MetadataDelta(MetadataImage.EMPTY)
        for record in records:
            delta.replay(record, end_offset - 1, epoch)
        image = replace(delta.apply(), offset=end_offset - 1, epoch=epoch)
        return cls(image, hooks)

    @property
    def image(self) -> MetadataImage:
        """The last published image."""
        return self._image

    def replay_batch(self, batch: LogBatch) -> None:
        with gc_paused():
            for i, record in enumerate(batch.records):
                self.replay(record, batch.base_offset + i, batch.epoch)
            self.publish()

    def replay_all(self, records: Iterable[tuple[int, int, MetadataRecord]]) -> None:
        """Replay (offset, epoch, record) triples, then publish what is not in a transaction."""
        with gc_paused():
            for offset, epoch, record in records:
                self.replay(record, offset, epoch)
            self.publish()

    def replay(self, record: MetadataRecord, offset: int, epoch: int) -> None:
        if offset <= self.last_offset:
            raise RecordApplyError(offset, "?", f"already replayed up to {self.last_offset}")
        which = record.WhichOneof("record")
        if which is None:
            raise RecordApplyError(offset, "?", "empty record envelope")
        if which == "begin_transaction_record":
            if self.open_transaction is not None:
                raise TransactionError(
                    offset,
                    "BeginTransactionRecord",
                    f"transaction {shown(self.open_transaction.name)} begun at offset "
                    f"{self.open_transaction.begin_offset} is still open",
                )
            self.publish()
            self.open_transaction = OpenTransaction(record.begin_transaction_record.name, offset)
            self._delta_for(offset)
        elif which in ("end_transaction_record", "abort_transaction_record"):
            if self.open_transaction is None:
                raise TransactionError(offset, KINDS[which].type_name, "no transaction is open")
            self.open_transaction = None
            if which == "end_transaction_record":
                self._delta_for(offset).replay(record, offset, epoch)
                self.publish()
            else:
                self._delta = self._folded = None
                self._image = replace(self._image, offset=offset, epoch=epoch)
        else:
            self._delta_for(offset).replay(record, offset, epoch, which)
        self.last_offset = offset

    def _delta_for(self, offset: int) -> MetadataDelta:
        if self._delta is None:
            if self._folded is None:
                self._delta = MetadataDelta(self._image)
                self._delta_first = offset
            else:  # the open transaction goes on from what is folded
                self._delta = MetadataDelta(self._folded)
        return self._delta

    def publish(self) -> None:
        """Publish pending changes; inside a transaction, fold them (the module doc)."""
        if self._delta is None:
            return
        if self.open_transaction is not None:
            self._folded, self._delta = self._delta.apply(), None
            return
        delta, self._delta = self._delta, None
        folded, self._folded = self._folded is not None, None
        previous, self._image = self._image, delta.apply()
        if self.hooks:
            manifest = LoadManifest(self._delta_first, delta.last_offset, delta.last_epoch)
            change = ImageChange(previous, self._image, None if folded else delta, manifest)
            for hook in self.hooks:
                hook(change)
