"""Importers: source formats -> canonical sessions and documents (see ``base.py``)."""
