"""Markdown document archives: ``cw import --format markdown``, heading/line reads, evidence.

* :mod:`.parse` — lines, headings, sections and paragraph blocks of a file's exact text;
* :mod:`.fingerprint` — the keyspace (``scopes`` tags 0xF0–0xF7) and per-file fingerprints;
* :mod:`.evidence` — paragraphs the search windows do not cover, as lexical evidence;
* :mod:`.ingest` — folders and files to ``markdown`` documents (locked, skip-unchanged);
* :mod:`.hits` — the Markdown fields of a search hit (:func:`.hits.markdown_fields`);
* :mod:`.read` — ``read-entry`` and ``read-markdown``;
* the engine methods are in :mod:`cwcore.methods.markdown` (and ``import`` in
  :mod:`cwcore.methods.archive`).

See ``docs/markdown.md``.
"""
