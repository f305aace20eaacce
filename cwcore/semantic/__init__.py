"""The semantic tier: local MiniLM embeddings of search windows, brute-force cosine search,
and an optional local cross-encoder reranker, both for explicit search and gather only, never
for automatic preflight. Everything runs offline from files installed with cw; see
docs/semantic.md."""
