"""Explain, the last stage: why a gang was not placed, in numbers a user can act on."""
