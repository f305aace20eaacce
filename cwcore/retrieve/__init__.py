"""Explicit retrieval: requests, tiers, fusion, expansion, rerank, bands, snippets."""
