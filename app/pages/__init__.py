"""The page scripts `kvlab serve` and the site build run (one file a page)."""
