"""Name patterns shared by the CRDs and the models."""

LEVEL_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
ROLE_NAME_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
