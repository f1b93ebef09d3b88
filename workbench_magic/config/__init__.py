"""The toolbox config: `models`, the ``${VAR}`` `parser`, `discovery` (and loading), `auth` config.

Also `messages` (the one-line `ConfigError` texts) and `defaults` (the embedded toolbox ``demo``).
Nothing is imported here: ``import workbench_magic`` stays free of pydantic.
"""
