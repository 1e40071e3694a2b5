"""``python -m services.verifier``: the verifier process, built by the role kit."""

from services.common.kit import role_process

role_process("verifier", __name__)
