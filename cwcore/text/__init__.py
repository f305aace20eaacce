"""Text primitives every layer shares: the tokenizer (terms, folding, offsets), the stopword
lists and the conservative token estimator. Imports nothing of cwcore above it."""
