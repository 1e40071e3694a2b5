"""``python -m services.gatekeeper``: the gatekeeper process, built by the role kit."""

from services.common.kit import role_process

role_process("gatekeeper", __name__)
