"""``python -m services.planner``: the planner process, built by the role kit."""

from services.common.kit import role_process

role_process("planner", __name__)
