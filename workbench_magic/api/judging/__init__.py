"""Judging a toolbox: evaluations against scripted or live models (cases, runs, exports) and the
portability of its schemas across providers.
"""
