"""``python -m services.composer``: the composer process, built by the role kit."""

from services.common.kit import role_process

role_process("composer", __name__)
