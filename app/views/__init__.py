"""Views: each displays part of a Store's state and never computes a model figure itself."""
