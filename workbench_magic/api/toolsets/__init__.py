"""Toolsets: a toolbox's tools handed to agent frameworks (pydantic-ai, LangChain, OpenAI Agents), each
call through the workbench.
"""
