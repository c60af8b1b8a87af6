"""The serving lab, requests over time: `panel serve app/pages/serving_lab.py`."""

from kvlab.app.engine_views.lab import build_lab_page

build_lab_page().servable()
