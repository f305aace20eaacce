"""Preflight hints: query extraction, the gate, frozen hints and their budgets."""
