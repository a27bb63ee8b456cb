"""Spark plumbing. Nothing here imports pyspark at module import time."""
