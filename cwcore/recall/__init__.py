"""Recall: signed locators, leases, exact materialization, gather."""
