"""Plumbing every screen shares: the archive handle, how errors read, and screen lifetimes.

The TUI never opens the store itself. It holds one :class:`ArchiveHandle` (created by
:func:`cwtui.app.make_app` from an archive factory) and calls the :class:`~cwcore.api.Archive`
facade through it, always from thread workers: opening may start the daemon, and every call is a
round trip, so none of it may run on the event loop.

A worker can outlive its screen: the user presses Esc while a transcript loads, or quits while
an export runs. Every screen derives from :class:`LiveScreen` and every message a worker posts
back derives from :class:`CallDone` (failures from :class:`CallFailed`): once a screen has left
the app's screen stacks (popped, dismissed, or the app is exiting) its workers are cancelled and
their late messages are dropped unhandled, and keys reach it only while it is mounted and live.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from textual import _time as textual_time  # the clock of Message.time
from textual import events
from textual.app import App
from textual.await_complete import AwaitComplete
from textual.binding import Binding, BindingType
from textual.keys import key_to_character
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Input

from cwcore.api import Archive
from cwcore.errors import CwError

ArchiveFactory = Callable[[], Archive]


class ArchiveHandle:
    """Opens the archive on first use and serializes calls to it.

    Contract: :meth:`use` may block (it opens the archive, then waits for any call in flight), so
    call it from thread workers only. A failed open is not remembered: the next :meth:`use` tries
    again, which is what a "retry" binding wants after the user starts the daemon. Calls are
    serialized because the embedded engine does not promise thread safety; the daemon client
    serializes on its one connection anyway, so nothing is lost.
    """

    def __init__(self, factory: ArchiveFactory) -> None:
        self._factory = factory
        self._archive: Archive | None = None
        self._lock = threading.RLock()
        self._state = threading.Lock()  # orders a call's end against close()
        #: Bumped (on the event loop) after the TUI changed the archive (forget, supersede);
        #: screens remember the value they loaded at and reload on resume when it moved.
        self.changes = 0

    def mark_changed(self) -> None:
        """Record that the archive changed, so screens showing older data reload on resume."""
        self.changes += 1

    #: Set by :meth:`close` while a call was in flight: that call closes the archive as it ends.
    _closing = False

    @contextmanager
    def use(self) -> Iterator[Archive]:
        """The open archive, held exclusively for the duration of the ``with`` block."""
        self._lock.acquire()
        try:
            if self._archive is None:
                self._archive = self._factory()
            yield self._archive
        finally:
            # Released under ``_state``, so :meth:`close` either takes the lock after this or
            # sets ``_closing`` before this reads it: never neither.
            with self._state:
                if self._closing:
                    self._close_now()
                self._lock.release()

    @property
    def busy(self) -> bool:
        """Whether a call is in flight (some thread holds the archive)."""
        if not self._lock.acquire(blocking=False):
            return True
        self._lock.release()
        return False

    def close(self) -> bool:
        """Close the archive if it was ever opened (called once, when the app exits).

        Never waits: with no call in flight the archive is closed now (True); otherwise the
        call in flight closes it as it ends (False), so quitting never waits on a worker. A
        write that call makes is committed before the archive closes.
        """
        with self._state:
            if not self._lock.acquire(blocking=False):
                self._closing = True
                return False
            try:
                self._close_now()
                return True
            finally:
                self._lock.release()

    @property
    def in_process(self) -> bool:
        """Whether the open archive runs the engine in this process (a call in flight then
        writes here, so the process must not end under it)."""
        return self._archive is not None and is_embedded(self._archive)

    def drain(self) -> None:
        """Wait until no call is in flight (the one in flight closes the archive as it ends
        when :meth:`close` was called meanwhile)."""
        with self._lock:
            pass

    def _close_now(self) -> None:
        self._closing = False
        if self._archive is not None:
            archive, self._archive = self._archive, None
            archive.close()


def is_embedded(archive: Archive) -> bool:
    """Whether ``archive`` runs the engine in this process (no daemon to ask for its status)."""
    return bool(getattr(archive, "embedded", False))


def archive_handle(app: App[Any]) -> ArchiveHandle:
    """The handle of the running cw app (screens only ever run inside :class:`CwApp`)."""
    handle = getattr(app, "archive_handle", None)
    if not isinstance(handle, ArchiveHandle):
        raise RuntimeError("cw screens must run inside cwtui.app.CwApp")
    return handle


def error_text(exc: BaseException) -> str:
    """One line for people: the typed message of a cw error, else the exception's type and text."""
    if isinstance(exc, CwError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


class CallDone(Message):
    """Base of every message a screen's thread worker posts back to its screen (results,
    progress, failures): :class:`LiveScreen` drops these once the screen is gone."""


class CallFailed(CallDone):
    """A screen's background call failed; ``text`` is the one-line error to show. Each screen
    subclasses it as its own ``Failed`` so Textual routes it to ``on_<screen>_failed``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


def screen_is_live(screen: Screen[Any]) -> bool:
    """Whether ``screen`` is still in one of the app's screen stacks (any mode's) and the app is
    not exiting. A popped or dismissed screen leaves its stack at once, before Textual starts
    removing its widgets, so this turns False before any of them is gone."""
    app = screen.app
    if getattr(app, "exiting", False):
        return False
    for mode in {app.current_mode, *getattr(app, "MODES", {})}:
        try:
            if screen in app.get_screen_stack(mode):
                return True
        except KeyError:  # a mode that was never shown has no stack yet
            continue
    return False


#: Modifiers that make a key a command even when the terminal also reports a character for it
#: (``alt+1`` comes with the character ``1``).
CHORDS = ("alt+", "ctrl+", "super+", "hyper+", "meta+")


def typed_text(event: events.Key) -> str | None:
    """The character ``event`` types into a text field (letters, digits, punctuation, space),
    or None for a command key: Enter, Tab, Esc, arrows, function keys, ctrl+ and alt+ chords."""
    if not event.is_printable or event.character is None or event.key.startswith(CHORDS):
        return None
    if is_alt_digit(event):
        return None
    return event.character


def types_text(key: str) -> bool:
    """Whether the binding key ``key`` (``"x"``, ``"question_mark"``, ``"f2"``) is a key that
    types a character, so a screen that sends typing to its query field never sees it."""
    if key.startswith(CHORDS):
        return False
    character = key_to_character(key)
    return character is not None and character.isprintable()


#: What alt+1 … alt+4 reach the app as from a terminal that sends Meta as an Esc prefix (xterm,
#: VTE, tmux): Textual reads Esc-digit as the macOS Option characters ``¡ ™ £ ¢``. Key names.
ALT_DIGITS = ("inverted_exclamation_mark", "trade_mark_sign", "pound_sign", "cent_sign")


def is_alt_digit(event: events.Key) -> bool:
    """Whether ``event`` is alt+1 … alt+4 (as Textual names it, or as Esc-digit reads)."""
    return event.key in ALT_DIGITS or (
        event.key.startswith("alt+") and event.key[4:] in ("1", "2", "3", "4")
    )


#: The app's keys that type a character (``?`` help, ``1``…``4`` the screens), again on keys
#: that do not, for the screens that send typing to their query (``q`` has ctrl+q already).
#: On the screen, not the app: the app's own keys stay as they are everywhere else.
TYPING_SCREEN_BINDINGS: list[BindingType] = [
    Binding("f1", "app.help", "Help", id="cw.help.f1", tooltip="Show the keys of this screen"),
    *(
        Binding(
            f"alt+{key},{ALT_DIGITS[int(key) - 1]}",
            f"app.switch_mode('{mode}')",
            title,
            show=False,
            id=f"cw.mode.{mode}.alt",
            tooltip=f"Go to {title}",
        )
        for key, mode, title in (
            ("1", "sessions", "Sessions"),
            ("2", "search", "Search"),
            ("3", "index", "Index"),
            ("4", "hints", "Hints"),
        )
    ),
]


class CommandInput(Input):
    """A text field of a screen that sends typing to it (:meth:`LiveScreen.typing_field`).

    alt+ chords are left to the bindings (``alt+2`` goes to the Search screen) instead of
    typing their character. While :attr:`routed` (typing reached the field from a list), the
    field keeps its cursor when it gets the focus instead of selecting its text, so the next
    key typed into it adds to what was routed; both reset when the field loses the focus."""

    #: Typing reached this field from a list since it last lost the focus.
    routed = False

    def on_key(self, event: events.Key) -> None:
        if (event.key.startswith(CHORDS) and event.is_printable) or is_alt_digit(event):
            event.prevent_default()  # not typed: the key goes on to the bindings

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        # A field takes every printable key before the bindings see it: not these.
        if key in ALT_DIGITS or key.startswith(CHORDS):
            return False
        return super().check_consume_key(key, character)

    def on_blur(self) -> None:
        self.routed = False
        self.select_on_focus = True


class LiveScreen(Screen[Any]):
    """The base of every cw screen; a modal lists it after ``ModalScreen`` (Textual inherits
    CSS along the first base only, and a modal needs ``ModalScreen``'s see-through background).

    Contract: a :class:`CallDone` message reaches its handler only while :func:`screen_is_live`;
    otherwise it is dropped and the screen's workers are cancelled (a cancelled thread worker's
    result is never shown). Bindings run only once the screen is mounted and while it is live: a
    key in the same burst as the one that opened the screen (Enter then Esc) is ignored rather
    than removing the screen while Textual is still mounting its widgets. Subclasses that
    override :meth:`check_action` call ``super().check_action`` first.

    Typing goes to the query (as in fzf): a screen whose :meth:`typing_field` names a text
    field sends every key that types a character there when it reaches the screen from a list
    or another widget that is not a text field (:meth:`on_key`); its commands are on keys that
    cannot be typed text (ctrl+ and alt+ chords, function keys, Enter, arrows, Esc). A list of
    results with letter bindings turned the next query typed into it into actions (``x``
    opened Supersede).

    :meth:`dismiss` acts once, and only on the screen on top: Textual's ``dismiss`` pops
    whatever screen is on top, so a second Enter of a burst (a second ``Input.Submitted``
    queued before the first dismiss ran) used to pop the screen below the modal, and then the
    base screen (``ScreenStackError``).
    """

    def open(self, screen: Screen[Any], callback: Callable[[Any], Any] | None = None) -> bool:
        """Push ``screen`` over this one, only while this screen is the one on top: the keys
        of a burst that arrive after the first push (``Enter j Enter``) still reach this
        screen's widgets, and each used to open another transcript over the first. Returns
        whether ``screen`` was pushed."""
        if not screen_is_live(self) or self.app.screen is not self:
            return False
        self.app.push_screen(screen, callback)
        return True

    def swap(self, screen: Screen[Any], callback: Callable[[Any], Any] | None = None) -> bool:
        """Replace this screen (dismissed with ``None``) by ``screen``, under the same rule as
        :meth:`open`: a second Enter of a burst opens nothing more. Returns whether it did."""
        if not screen_is_live(self) or self.app.screen is not self:
            return False
        self.dismiss(None)
        self.app.push_screen(screen, callback)
        return True

    def dismiss(self, result: Any = None) -> AwaitComplete:
        if not screen_is_live(self) or self.app.screen is not self:
            return AwaitComplete.nothing()
        return super().dismiss(result)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.is_mounted and screen_is_live(self)

    def typing_field(self) -> CommandInput | None:
        """The field typing goes to when the focus is elsewhere (None: keys keep their
        bindings everywhere on this screen)."""
        return None

    def routes_from(self, widget: Widget | None) -> bool:
        """Whether typing with ``widget`` focused goes to :meth:`typing_field`: from anything
        but a text field (which types into itself) or a drop-down (which picks by letter)."""
        from textual.widgets import Select

        if widget is None:
            return True
        return not isinstance(widget, Input) and not any(
            isinstance(node, Select) for node in widget.ancestors_with_self
        )

    def takes_key(self, key: str) -> bool:
        """Whether a binding on ``key`` can fire from this screen's lists: on a screen that
        sends typing to its field, a key that types a character never reaches the bindings
        (``slash`` still focuses the field: :meth:`type_into`)."""
        return self.typing_field() is None or key == "slash" or not types_text(key)

    async def on_key(self, event: events.Key) -> None:
        field = self.typing_field()
        if field is None or not self.is_mounted or self.app.screen is not self:
            return
        if not screen_is_live(self) or not self.routes_from(self.focused):
            return
        if event.key == "enter" and field.routed:
            # Typed into the list in one burst with its Enter: the focus had not reached the
            # field yet, and the Enter belongs to what was typed, not to the list's selection.
            event.stop()
            event.prevent_default()
            field.focus()
            await field.action_submit()
            return
        if event.key == "backspace":
            event.stop()
            event.prevent_default()
            self.type_into(field, None)
            return
        text = typed_text(event)
        if text is None:
            return
        event.stop()
        event.prevent_default()
        self.type_into(field, text)

    def type_into(self, field: CommandInput, text: str | None) -> None:
        """Put ``text`` typed elsewhere on the screen into ``field`` and focus it. The first
        character starts a new query (as ``/`` and typing did: the field selects its text
        when focused) and the following ones add to it; ``/`` first only focuses the field;
        ``None`` is Backspace: the field's last character is deleted (edit the query)."""
        if text == "/" and not field.routed:
            field.focus()  # the field's text is selected: what is typed next replaces it
            return
        if text is None:
            field.value = field.value[:-1]
        elif field.routed:
            field.value += text
        else:
            field.value = text
        field.routed = True
        field.select_on_focus = False
        field.cursor_position = len(field.value)
        field.focus()

    #: When the screen was mounted (Textual's clock, as ``Message.time``); None before.
    #: A dialog takes only the keys typed after it (:meth:`typed_blind`).
    shown_at: float | None = None

    def on_mount(self) -> None:
        # The footer asked check_action while the screen was mounting (every binding then off):
        # ask again once it is mounted.
        # Keys created before this moment were typed before the screen existed: a burst read in
        # one go is created before the push, whatever the machine's load.
        self.shown_at = textual_time.get_time()
        self.call_after_refresh(self.refresh_bindings)

    def typed_blind(self, event: events.Key | events.Paste) -> bool:
        """Whether ``event`` is a key (or paste) a dialog must drop: one that was typed before
        the dialog was on the screen, so nobody typed it into the dialog. A shell line typed into
        the TUI by mistake (``echo hi > out``) opened Export on ``e`` and the rest became an
        export file named after the command; ``x`` then Enters reached Supersede the same way.
        Only modal dialogs drop them (a screen of its own has nothing to confirm), and never
        Esc, which only closes."""
        if not isinstance(self, ModalScreen):
            return False
        if isinstance(event, events.Key) and event.key == "escape":
            return False
        return self.shown_at is None or event.time < self.shown_at

    async def _on_message(self, message: Message) -> None:
        if isinstance(message, CallDone) and not screen_is_live(self):
            self.workers.cancel_node(self)
            return  # a late result for a screen that is gone: nothing is left to show it on
        await super()._on_message(message)

    def on_screen_suspend(self) -> None:
        if not screen_is_live(self):
            self.workers.cancel_node(self)
