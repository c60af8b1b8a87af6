"""`kvlab serve`: the Panel server (serve.py), its setup script (setup.py), and every patch of Panel,
Bokeh and Tornado it applies, each checked against the releases it was written for (patches.py)."""
