"""The examples' dangerous tool: it deletes nothing, it leaves a line in
``TOOL_LOG`` per run (the tests count them) and a mark in ``RAN``."""

from __future__ import annotations

from _env import record
from strands import tool

#: The tables ``delete_rows`` ran for, in this process.
RAN: list[str] = []


@tool
def delete_rows(table: str, older_than_days: int) -> str:
    """Delete the rows of a table older than some days."""
    record(f"delete_rows {table} {older_than_days}")
    RAN.append(table)
    return f"deleted 3 rows from {table} older than {older_than_days} days"
