"""Dynamic Resource Allocation: device selectors (CEL) and allocating claims on a node."""
