"""The serving lab's settings, store and views (app/pages/serving_lab.py assembles them)."""
