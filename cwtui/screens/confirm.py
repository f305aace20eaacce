"""The base of the dialogs that change the archive: supersede, undo a supersession, forget.

:class:`ArchiveChangeDialog` owns what the three share: a confirm button that is disabled while
the call runs (so a double press cannot send it twice), the call itself in a thread worker, and
the outcome. On success the archive handle is marked changed (screens showing older data reload
on resume), a notification says what happened, and the dialog dismisses with the engine's
answer; on a failure the error is a notification, the button comes back and the dialog stays
open with what was typed. Escape and the cancel button dismiss with ``None``.

A subclass composes its form, names its buttons (``GO``, ``CANCEL``), does the call in
:meth:`perform` (on the worker thread) and words the outcome in :meth:`done_text`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from textual import on, work
from textual.screen import ModalScreen
from textual.widgets import Button

from cwcore.api import Archive
from cwcore.errors import CwError
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)

#: The engine's typed answer to the change (``Superseded``, ``Restored``, ``Forgotten``).
R = TypeVar("R")


class ArchiveChangeDialog(ModalScreen[R | None], LiveScreen, Generic[R]):
    """A modal form that makes one change to the archive; see the module docstring."""

    #: Id of the confirm button (without ``#``).
    GO: ClassVar[str]
    #: Id of the cancel button (without ``#``).
    CANCEL: ClassVar[str]
    #: Title of the notifications, and the start of the failure text (``"<ACTION> failed: …"``).
    ACTION: ClassVar[str]

    class Done(CallDone):
        def __init__(self, result: Any) -> None:
            super().__init__()
            self.result = result

    class Failed(CallFailed):
        pass

    def perform(self, archive: Archive, request: dict[str, Any]) -> R:
        """Make the change (called on the worker thread, with the archive held)."""
        raise NotImplementedError

    def done_text(self, result: R) -> str:
        """The notification for a change that was made."""
        raise NotImplementedError

    def start(self, request: dict[str, Any]) -> None:
        """Disable the confirm button and run :meth:`perform` with ``request`` in a worker."""
        self.query_one(f"#{self.GO}", Button).disabled = True
        self._call(archive_handle(self.app), request)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == self.CANCEL:
            event.stop()
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @work(thread=True, exclusive=True, group="archive-change", exit_on_error=False)
    def _call(self, handle: ArchiveHandle, request: dict[str, Any]) -> None:
        try:
            with handle.use() as archive:
                result = self.perform(archive, request)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.post_message(self.Done(result))

    @on(Done)
    def _done(self, message: Done) -> None:
        archive_handle(self.app).mark_changed()
        self.app.notify(self.done_text(message.result), title=self.ACTION, markup=False)
        self.dismiss(message.result)

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.query_one(f"#{self.GO}", Button).disabled = False
        self.notify(f"{self.ACTION} failed: {message.text}", severity="error", markup=False)
