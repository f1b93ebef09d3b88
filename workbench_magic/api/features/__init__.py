"""The protocol's features beyond tools: what servers offer (resources, prompts, completions, logging,
subscriptions) and what the client offers them (roots, sampling, elicitation).
"""
