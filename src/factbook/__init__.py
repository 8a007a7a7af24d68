"""factbook: a living, verifiable handbook of what a team learns on its GPU boxes."""

__version__ = "0.1.0"
