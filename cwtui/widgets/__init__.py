"""Reusable widgets of the TUI. They render what screens hand them and post small messages;
none of them calls the Archive (screens do, from thread workers)."""
