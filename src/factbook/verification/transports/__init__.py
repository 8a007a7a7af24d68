"""Transports: how the agent script reaches a box (local subprocess, SSH, SSH through jumps)."""

from factbook.verification.transports.base import AgentProcess, Transport, transport_for

__all__ = ["AgentProcess", "Transport", "transport_for"]
