"""A stated log line quotes the error field a structured logger attached to it."""

from __future__ import annotations

from typing import Any

from services.executor.claim_templates import templates
from services.executor.log_causes import named, signatures
from services.executor.log_lines import Logged
from services.executor.log_records import DETAIL_CHARS, error_detail, searched, wording
from services.executor.tools.refs import log_text
from services.verifier.structure import check_claim

ERR = (
    "Error making API request.\n\nURL: PUT https://vault.vault.svc:8200/v1/transit/decrypt/payee"
    "\nCode: 503. Errors:\n\n* Vault is sealed"
)


def _record(**fields: Any) -> dict[str, Any]:
    return {
        "timestamp": "2026-12-05T14:02:11Z",
        "level": "ERROR",
        "service": "payee-directory",
        "instance": "",
        "message": "decrypt payee bank details",
        "metrics": {"payee_id": "pay_3f9a1", **fields},
    }


def test_the_error_field_is_quoted_and_the_verifier_holds_it() -> None:
    record = _record(err=ERR)
    for lang in ("en", "zh"):
        claim = wording(record, lang, templates())
        assert "decrypt payee bank details" in claim and "Vault is sealed" in claim, claim
        ref = log_text(record)
        assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), claim
        edited = check_claim(claim.replace("503", "502"), [ref])
        assert any(r.conflict or not r.found for r in edited), lang


def test_a_line_without_an_error_field_reads_as_before() -> None:
    record = _record()
    assert error_detail(record) is None
    assert wording(record, "en", templates()).endswith('ERROR: "decrypt payee bank details"')
    assert searched(record) == "decrypt payee bank details"


def test_a_long_error_is_cut_at_a_space_and_stays_word_for_word() -> None:
    long = "connection refused " * 40
    field, value = error_detail(_record(error=long)) or ("", "")
    assert field == "error" and len(value) <= DETAIL_CHARS
    assert long.startswith(value) and long[len(value)] == " "


def test_a_log_signature_reads_the_error_field() -> None:
    record = _record(err="dial tcp 10.0.0.7:8200: connect: connection refused")
    line = Logged(wording(record, "en", templates()), searched(record), "ERROR", 1000.0)
    found = named([line], onset=1200.0)
    assert found is not None and found.category == "dependency_failure"


def test_client_library_words_for_a_failing_call_and_an_exhausted_pool() -> None:
    def ids(message: str) -> list[str]:
        return [s.id for s in signatures().signatures if s.matches(message)]

    for failing in (
        "aiohttp.client_exceptions.ClientConnectorError: Cannot connect to host api.x.io:443",
        "TimeoutError: request exceeded ClientTimeout(total=5)",
        "aiohttp.client_exceptions.ClientResponseError: 503, message='Service Unavailable'",
        "Error making API request.\n\nURL: PUT https://vault:8200/v1/transit\nCode: 503.",
    ):
        assert ids(failing) == ["dependency-unreachable"], failing
    prisma = "Timed out fetching a new connection from the connection pool. (connection limit: 10)"
    assert ids(prisma) == ["pool-exhausted"]
    assert ids("GET /v2/feed 500 10013ms") == []


def test_an_error_field_the_message_already_holds_is_not_repeated() -> None:
    record = _record(err="unknown time zone America/Chicago")
    record["message"] = "job failed: unknown time zone America/Chicago"
    assert error_detail(record) is None
    assert wording(record, "en", templates()).endswith('America/Chicago"')
