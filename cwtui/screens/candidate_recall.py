"""Recall of a frozen preflight decision's candidate, opened from its candidates list.

A decision names its candidates by id only (``<documentId>#<messageKey>``): automatic hints
never carry locators. Recalling the bare document id is a direct read — no agent, no byte range,
no message map, so the recall view showed ``None``, ``bytes 0–0 · 0 tokens`` and every message
under one ``system`` label. :class:`CandidateRecallScreen` first asks the archive for a locator
of the candidate's message (``Archive.hint_locator``, engine method ``hints.locate``), then
recalls it as any search hit is recalled: provenance, messages with their roles, and the
candidate's message as the match.
"""

from __future__ import annotations

from textual import work

from cwcore.errors import CwError
from cwcore.retrieve.locator import is_locator
from cwtui.screens.common import ArchiveHandle, archive_handle, error_text
from cwtui.screens.recall import RecallScreen


class CandidateRecallScreen(RecallScreen):
    """The recall view of a decision's candidate: locate it, then recall the locator."""

    def __init__(self, candidate: str, document_id: str) -> None:
        super().__init__(candidate, document_id=document_id)
        self.candidate = candidate

    def action_reload(self) -> None:
        if is_locator(self.locator):
            super().action_reload()
        else:
            self._locate(archive_handle(self.app))

    @work(thread=True, exclusive=True, group="recall-locate", exit_on_error=False)
    def _locate(self, handle: ArchiveHandle) -> None:
        try:
            with handle.use() as archive:
                locator = archive.hint_locator(self.candidate)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.app.call_from_thread(self._located, locator)

    def _located(self, locator: str) -> None:
        self.locator = locator
        super().action_reload()
