"""Comparing what the page shows with sim's figures for the same state."""

from __future__ import annotations

from tests.app.readout import assert_shows, number  # noqa: F401  (one definition of "shows")
