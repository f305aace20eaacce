"""The canonical RocksDB archive: keys, codecs, column families, admission, retention."""
