"""What the migration driver needs of the quorum controller, taken on the Raft event loop
(the only thread that may touch it): an immutable snapshot of the poll's inputs, and
appends of the copy's batches that do nothing under another leader epoch.

Threading: every method may be called from the driver's thread; work reaches the
controller through the loop (``call``/``post``) and answers come back as futures.
:meth:`ControllerPort.committed_offset` is a plain read, from any thread.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from migration.controller.quorum_controller import QuorumController
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.event_loop import EventLoop

INPUT_TIMEOUT_S = 10.0


class LeadershipLostError(RuntimeError):
    """The work was created under a leader epoch that is over."""


@dataclass(frozen=True)
class Inputs:
    """What one poll decides on, read at once on the loop."""

    node_id: int
    active: bool
    leader_id: int | None
    epoch: int
    image: MetadataImage  # the committed image
    high_watermark: int


class ControllerPort:
    def __init__(self, loop: EventLoop, controller: QuorumController) -> None:
        self.loop = loop
        self.controller = controller

    def inputs(self) -> Inputs:
        def read() -> Inputs:
            c = self.controller
            raft = c.raft
            assert raft is not None
            return Inputs(
                node_id=c.node_id,
                active=c.active,
                leader_id=c.leader_id,
                epoch=raft.epoch,
                image=c.committed,
                high_watermark=raft.high_watermark,
            )

        return self.loop.call(read, INPUT_TIMEOUT_S)

    def committed_offset(self) -> int:
        """The committed image's offset, read from any thread without the loop (the
        status answers while the loop is busy): the image is immutable and replaced whole
        on the loop, before the quorum controller acknowledges any write it holds, so
        the read is never behind an acknowledgement its caller has seen."""
        return self.controller.committed.offset

    def _current(self, epoch: int) -> bool:
        raft = self.controller.raft
        return self.controller.active and raft is not None and raft.epoch == epoch

    def append(self, epoch: int, records: list[MetadataRecord]) -> Future[int]:
        """Append ``records`` as one batch if this node still leads in ``epoch``; the
        future holds the last record's offset once committed, or LeadershipLostError
        (NOT_CONTROLLER). A refusal never comes back here: it halts the controller
        (:meth:`QuorumController.append_records`), so validate before appending."""
        future: Future[int] = Future()

        def answered(response: object) -> None:
            if isinstance(response, int):
                future.set_result(response)
            else:
                why = response.error_message if isinstance(response, cpb.RequestError) else ""
                future.set_exception(LeadershipLostError(why or str(response)))

        def on_loop() -> None:
            if not self._current(epoch):
                future.set_exception(LeadershipLostError(f"leader epoch {epoch} is over"))
            else:
                self.controller.append_records(records, answered)

        self.loop.post(on_loop)
        return future

    def renounce(self, epoch: int, why: str) -> None:
        """Give up leadership if still leading in ``epoch`` (a copy failed half-way: the
        next leader aborts its open transaction before anything else)."""

        def on_loop() -> None:
            if self._current(epoch):
                self.controller.renounce(why)

        self.loop.post(on_loop)

    def refuse_admin_writes(self, why: str | None) -> None:
        """Refuse (``why``) or accept again (None) user metadata writes."""
        self.controller.write_behind_refusal = why
