"""Phalanx: gang scheduling and topology-aware GPU placement for Kubernetes."""

__version__ = "0.1.0"

API_GROUP = "scheduling.phalanx.io"
API_VERSION = "v1alpha1"
SCHEDULER_NAME = "phalanx"
