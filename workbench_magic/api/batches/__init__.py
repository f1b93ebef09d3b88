"""Batches: a tool called over many rows (`wb.map`), checkpointed to disk and resumed, on threads or on
Dask workers.
"""
