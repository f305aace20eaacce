"""The semantic tier: local MiniLM embeddings of search windows, brute-force cosine search,
and an optional local cross-encoder reranker (spec 000 "Embedding semantic", "Cross-encoder
rerank"). Everything runs offline from files installed with cw; see docs/semantic.md."""
