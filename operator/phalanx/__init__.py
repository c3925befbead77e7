"""Phalanx: gang scheduling and topology-aware GPU placement for Kubernetes."""

__version__ = "0.1.0"
