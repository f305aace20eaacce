"""Derived indexes: tokenization, persisted BM25 postings and scoring.

Everything here is rebuildable from canonical records: corrupt or missing index data is
repaired by reindexing, never by touching canonical records.
"""
