"""fleetgen49: a mid-window configuration rollout (blind set; see generator.py)."""
