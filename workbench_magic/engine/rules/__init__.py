"""Rules over schemas and surfaces: a schema's portability to each provider, what changed between two
schemas, and snapshots and diffs of a toolbox's surface.
"""
