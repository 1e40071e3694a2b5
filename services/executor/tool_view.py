"""What the executor model is shown of its tool calls, capped to the context budget.

Why caps: a log backend answers up to 200 lines per query, and shown whole one such
call fills a small model's window by itself. The model only ever sees the evidence
refs code built (``raw_path`` and ``text``), so capping means showing fewer refs:

- per call, refs in order until the call's share of tokens is used — always at
  least one, so a call that found something leaves the model something to cite;
  a ref's text is cut to :data:`REF_TEXT_CHARS` characters (a prefix of a ref's
  text is still a verbatim excerpt the gatekeeper accepts);
- per round, the calls of one model turn share ``tool_round_tokens``: each gets
  the smaller of ``tool_result_tokens`` and an equal share of the round.

What was cut is stated in the tool message itself, ``"truncated": {"refs_shown",
"refs_total", "texts_cut"}``, so the model knows the list goes on and must not
read the shown part as all there is.

Invocation ids are long (48-bit numbers cost many tokens), so the model sees each
invocation by a short index, 1, 2, 3 in call order, and :meth:`ToolView.real_ids`
maps the indexes of its answer back before the answer is checked. A null field is
left out, and so are ``success`` when it is true, the evidence status when it is
``supported`` (the refs show it) and an empty ref list; the evidence status and
refs stand at the top of the message, not nested in ``retrieval_details``, as
compact JSON.
The ``small`` profile (``TRACEBOUND_LLM_PROFILE``) shows at most :data:`SMALL_REFS`
refs per call, each cut to :data:`SMALL_TEXT_CHARS` characters.

When the whole conversation is still over the window, :meth:`ToolView.trims`
offers smaller versions in this order: the oldest tool results first, each cut to
its first refs (:data:`COMPACT_TOKENS`), then every ref text shortened to
:data:`SHORT_TEXT_CHARS`. The system instructions and the question are never cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from services.executor.gate import Refusal
from tracebound.events import EvidenceRef, ToolInvocation
from tracebound.llm import PromptBudget, ToolCall, Trim, tool_message

REF_TEXT_CHARS = 600
COMPACT_TOKENS = 150
SHORT_TEXT_CHARS = 160
SMALL_REFS = 3
SMALL_TEXT_CHARS = 240
SUPPORTED = "supported"  # the evidence status a shown ref list speaks for itself

Result = ToolInvocation | Refusal


@dataclass(frozen=True, slots=True)
class RefCap:
    """How much of one call's refs to show: a token share and a per-text length."""

    tokens: int
    text_chars: int = REF_TEXT_CHARS
    max_refs: int | None = None


_BREAKS = (", ", "; ", " ")


def cut_text(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, cut before a separator, never inside a value.

    A prefix that ends mid-value ("above the 80% th") would not be a fact the excerpt
    check can match; one that ends at a field or word boundary still is.
    """
    if len(text) <= limit:
        return text
    head = text[:limit]
    for mark in _BREAKS:
        at = head.rfind(mark)
        if at > limit // 2:
            return head[:at]
    return head


def shown_refs(
    refs: Sequence[EvidenceRef], cap: RefCap, budget: PromptBudget
) -> tuple[list[dict[str, str]], dict[str, int] | None]:
    """The refs to show (in order, at least one) and what was cut, or None when nothing."""
    shown: list[dict[str, str]] = []
    used = texts_cut = 0
    for ref in refs:
        text = cut_text(ref.text, cap.text_chars)
        item = {"raw_path": ref.raw_path, "text": text}
        cost = budget.tokens(json.dumps(item, ensure_ascii=False))
        if shown and (used + cost > cap.tokens or len(shown) == (cap.max_refs or len(refs))):
            break
        shown.append(item)
        used += cost
        texts_cut += len(text) < len(ref.text)
    if len(shown) == len(refs) and not texts_cut:
        return shown, None
    return shown, {"refs_shown": len(shown), "refs_total": len(refs), "texts_cut": texts_cut}


def tool_result(
    result: Result, cap: RefCap, budget: PromptBudget, shown_id: int | None = None
) -> str:
    """What the model is shown of one call: ids and capped refs, never the raw output.

    ``shown_id`` is the short index the model sees instead of the invocation id.
    """
    if isinstance(result, Refusal):
        return _json({"refused": True, "reason": result.reason})
    details = result.retrieval_details
    view: dict[str, Any] = {
        "source_invocation_id": shown_id if shown_id is not None else result.source_invocation_id,
        "tool_name": result.tool_name,
    }
    if not result.success:
        view["success"] = False
    if result.error_message:
        view["error_message"] = result.error_message
    if details is not None:
        refs, truncated = shown_refs(details.evidence_refs, cap, budget)
        if details.evidence_status != SUPPORTED:
            view["evidence_status"] = details.evidence_status
        if refs:
            view["evidence_refs"] = refs
        if truncated is not None:
            view["truncated"] = truncated
    return _json(view)


def _json(value: Mapping[str, Any]) -> str:
    """Compact JSON: the separators' spaces would cost a token each in every result."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def invalid_arguments(call: ToolCall) -> Refusal:
    """The refusal of a call whose arguments are not a JSON object."""
    return Refusal(tool_name=call.name, params={}, reason="arguments are not valid JSON")


class ToolView:
    """The tool results of one executor conversation, rendered within the budget."""

    def __init__(self, budget: PromptBudget) -> None:
        self.budget = budget
        self._results: dict[str, tuple[Result, RefCap]] = {}
        self._shown: dict[int, int] = {}  # invocation id -> the index the model sees
        self._real: dict[int, int] = {}  # and back

    def shown_id(self, result: Result) -> int | None:
        """The short index of ``result``'s invocation (None for a refusal)."""
        if isinstance(result, Refusal):
            return None
        real = result.source_invocation_id
        if real not in self._shown:
            self._shown[real] = len(self._shown) + 1
            self._real[self._shown[real]] = real
        return self._shown[real]

    @property
    def short_ids(self) -> dict[int, int]:
        """Invocation id by the index the model saw."""
        return dict(self._real)

    def real_ids(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
        """The model's answer with every cited index replaced by its invocation id.

        A number that is no index shown stays as written, for the gatekeeper to judge.
        """
        if value is None or not isinstance(value.get("claims"), list):
            return value
        claims = [self._claim_ids(claim) for claim in value["claims"]]
        return {**value, "claims": claims}

    def _claim_ids(self, claim: Any) -> Any:
        bindings = claim.get("evidence_bindings") if isinstance(claim, Mapping) else None
        if not isinstance(bindings, list):
            return claim
        return {**claim, "evidence_bindings": [self._binding_id(b) for b in bindings]}

    def _binding_id(self, binding: Any) -> Any:
        cited = binding.get("source_invocation_id") if isinstance(binding, Mapping) else None
        if type(cited) is int and cited in self._real:
            return {**binding, "source_invocation_id": self._real[cited]}
        return binding

    def round_cap(self, calls: int) -> RefCap:
        """Each call's share when ``calls`` calls answer one model turn."""
        share = self.budget.tool_round_tokens // max(calls, 1)
        if self.budget.small:
            return RefCap(
                tokens=min(self.budget.tool_result_tokens, share) // 2,
                text_chars=SMALL_TEXT_CHARS,
                max_refs=SMALL_REFS,
            )
        return RefCap(tokens=min(self.budget.tool_result_tokens, share))

    def answer(self, results: Sequence[tuple[ToolCall, Result]]) -> list[dict[str, Any]]:
        """The tool messages answering one model turn, capped per call and per round."""
        cap = self.round_cap(len(results))
        messages = []
        for call, result in results:
            self._results[call.id] = (result, cap)
            shown = self.shown_id(result)
            messages.append(tool_message(call, tool_result(result, cap, self.budget, shown)))
        return messages

    def _render(
        self, messages: Sequence[Mapping[str, Any]], caps: Mapping[str, RefCap]
    ) -> list[dict[str, Any]]:
        """A copy of ``messages`` with the tool results named in ``caps`` shown smaller."""
        out = []
        for message in messages:
            copy = dict(message)
            call_id = message.get("tool_call_id")
            if message.get("role") == "tool" and call_id in caps and call_id in self._results:
                result, _cap = self._results[str(call_id)]
                shown = self.shown_id(result)
                copy["content"] = tool_result(result, caps[call_id], self.budget, shown)
            out.append(copy)
        return out

    def trims(self, messages: Sequence[Mapping[str, Any]]) -> Iterator[Trim]:
        """Smaller versions of ``messages``: oldest results compacted first, then short texts."""
        ids = [
            str(m["tool_call_id"])
            for m in messages
            if m.get("role") == "tool" and m.get("tool_call_id") in self._results
        ]
        compact: dict[str, RefCap] = {}
        for call_id in ids:
            compact = {**compact, call_id: RefCap(tokens=COMPACT_TOKENS)}
            label = f"tool result {call_id} cut to its first refs"
            yield Trim(label, partial(self._render, messages, compact))
        short = {i: RefCap(tokens=COMPACT_TOKENS, text_chars=SHORT_TEXT_CHARS) for i in ids}
        if short:
            label = f"ref texts of {len(ids)} tool result(s) cut to {SHORT_TEXT_CHARS} characters"
            yield Trim(label, partial(self._render, messages, short))


__all__ = [
    "COMPACT_TOKENS",
    "REF_TEXT_CHARS",
    "SHORT_TEXT_CHARS",
    "SMALL_REFS",
    "SMALL_TEXT_CHARS",
    "RefCap",
    "ToolView",
    "cut_text",
    "invalid_arguments",
    "shown_refs",
    "tool_result",
]
