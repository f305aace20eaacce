"""The daemon: one process per resolved store path owns RocksDB behind a private Unix socket.

Modules: :mod:`.paths` (socket, pid/lock and log locations and their safety checks),
:mod:`.protocol` (framing and message shapes), :mod:`.service` (what the server serves),
:mod:`.server` (the asyncio server and its limits), :mod:`.client` (the connecting side, with
autostart and retries), :mod:`.control` (status/start/stop/restart for faces). This package
imports nothing heavy so the lean hook client stays fast; import the submodules you need.
"""
