"""The toolbox config: pydantic models, the ${VAR} parser, discovery."""
