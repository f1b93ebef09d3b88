"""Models in the loop: resolving a model, sampling for servers, chat with the toolbox's tools, and what
the tools cost in a model's context.
"""
