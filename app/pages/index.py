"""The landing page: what kvlab is and a card for each panel."""

from kvlab.app.shell.landing import build_landing

build_landing().servable()
