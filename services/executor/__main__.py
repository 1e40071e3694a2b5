"""``python -m services.executor``: the executor process, built by the role kit."""

from services.common.kit import role_process

role_process("executor", __name__)
