"""Placement, the second stage: the per-cycle free capacity (`state`), where a gang may go
(`routes`), all of it inside one topology domain or none (`gang`), the node (`node_choice`)
and device each pod takes, and how much a choice fragments (`fragmentation`)."""
