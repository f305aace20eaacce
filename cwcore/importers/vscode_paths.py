"""Where VS Code (and its builds Insiders and VSCodium) keep a user's data, per platform, as
:class:`~cwcore.importers.base.Location` values the VS Code-hosted formats share (Copilot
Chat's sessions, the Cline and Roo Code extensions' task folders).

VS Code's ``User`` folder is ``$XDG_CONFIG_HOME/<build>/User`` on Linux, ``~/Library/Application
Support/<build>/User`` on macOS and ``%APPDATA%\\<build>\\User`` on Windows, ``<build>`` being
``Code``, ``Code - Insiders`` or ``VSCodium``.
"""

from __future__ import annotations

from cwcore.importers.base import Location

#: The builds whose ``User`` folders are walked.
BUILDS = ("Code", "Code - Insiders", "VSCodium")

_USER_ROOTS = (
    ("$XDG_CONFIG_HOME/{build}/User", "linux"),
    ("~/Library/Application Support/{build}/User", "darwin"),
    ("$APPDATA/{build}/User", "win32"),
)


def user_locations(
    relative: str,
    names: tuple[str, ...],
    depth: int | None,
    builds: tuple[str, ...] = BUILDS,
) -> tuple[Location, ...]:
    """One location per build and platform: ``<User>/<relative>``, files named ``names``,
    ``depth`` folder levels deep."""
    out = []
    for build in builds:
        for root, platform in _USER_ROOTS:
            where = root.format(build=build) + (f"/{relative}" if relative else "")
            out.append(Location(where, names, (platform,), depth))
    return tuple(out)
