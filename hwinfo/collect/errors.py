"""The error every source of snapshots raises when it cannot be set up: below all of them."""

from __future__ import annotations


class SetupError(Exception):
    """The collectors cannot be set up (or a remote snapshot had) as asked; one line for a person."""
