"""The context budget: token estimates per family, fitting in order, caps on tool results."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from services.executor.gate import Refusal
from services.executor.tool_view import RefCap, ToolView, shown_refs, tool_result
from tracebound.events import EvidenceRef, RetrievalDetails, ToolInvocation
from tracebound.llm import (
    LLMSettings,
    ModelReply,
    PromptBudget,
    PromptOverBudget,
    StepRecorder,
    ToolCall,
    Trim,
    budget_for,
)
from tracebound.llm.budget import clip_fields, estimate_text, family_for, load_families


def budget(window: int = 8192, reply: int = 1024, model: str = "qwen2.5:7b") -> PromptBudget:
    settings = LLMSettings(context_window=window, max_tokens=reply, model=model)
    return PromptBudget.from_settings(settings)


def test_family_table_has_a_default_and_names_match_by_marker() -> None:
    families = load_families()
    assert families[-1].name == "default" and not families[-1].markers
    assert family_for("Qwen/Qwen2.5-7B-Instruct").name == "qwen"
    assert family_for("gpt-4o-mini").name == "gpt-4o"
    assert family_for("gpt-4-turbo").name == "gpt-4"
    assert family_for("meta-llama/Llama-3.1-8B").name == "llama"
    assert family_for("some-unknown-model").name == "default"


def test_cjk_characters_count_about_one_token_each_and_latin_a_fraction() -> None:
    family = family_for("qwen")
    latin = "a" * 340
    cjk = "告警" * 50
    assert estimate_text("", family) == 0
    assert estimate_text(latin, family) == 100  # 340 / 3.4
    assert estimate_text(cjk, family) == 100  # 100 characters x 1.0
    assert estimate_text(cjk, family_for("mistral")) == 150
    # Non-ASCII outside CJK (accents, symbols) weighs double a plain letter.
    assert estimate_text("é" * 34, family) == 2 * estimate_text("e" * 34, family)


def test_settings_refuse_a_reply_reserve_that_leaves_no_room() -> None:
    with pytest.raises(ValidationError, match="max_tokens"):
        LLMSettings(context_window=4096, max_tokens=3000)
    assert budget(8192, 1024).limit == 7168


def test_fit_sends_the_original_when_it_fits_and_the_first_trim_that_fits() -> None:
    b = budget(2048, 1024)
    small = [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]
    assert b.fit(small).cuts == ()
    big = [{"role": "system", "content": "x" * 6000}, {"role": "user", "content": "q"}]
    built: list[str] = []

    def shorter(n: int) -> Trim:
        def build() -> list[dict[str, str]]:
            built.append(str(n))
            return [{"role": "system", "content": "x" * n}, {"role": "user", "content": "q"}]

        return Trim(f"to {n}", build)

    fitted = b.fit(big, trims=iter([shorter(5000), shorter(2000), shorter(100)]))
    assert fitted.cuts == ("to 5000", "to 2000")
    assert fitted.tokens <= b.limit and fitted.messages[0]["content"] == "x" * 2000
    assert built == ["5000", "2000"], "trims are built lazily, only as far as needed"
    with pytest.raises(PromptOverBudget) as caught:
        b.fit(big, trims=[shorter(5000)])
    assert caught.value.kind == "over_budget" and caught.value.tokens > b.limit


def test_tool_specs_and_echoed_tool_calls_count_too() -> None:
    b = budget()
    messages = [{"role": "user", "content": "q"}]
    tools = [{"name": "query_logs", "description": "d" * 3400, "parameters": {}}]
    assert b.estimate(messages, tools) >= b.estimate(messages, None) + 1000
    # The wire wrapper is counted once, whether the spec is wrapped yet or not.
    wrapped = [{"type": "function", "function": t} for t in tools]
    assert b.estimate(messages, wrapped) == b.estimate(messages, tools)


def test_clip_fields_cuts_only_the_named_keys_at_any_depth() -> None:
    data = {"a": [{"evidence_excerpt": "y" * 50, "claim_text": "z" * 50}], "notes": {"k": "w" * 9}}
    out = clip_fields(data, frozenset({"evidence_excerpt", "notes"}), 5)
    assert out["a"][0] == {"evidence_excerpt": "yyyyy…", "claim_text": "z" * 50}
    assert out["notes"] == {"k": "wwwww…"}


def refs(count: int, width: int = 200) -> tuple[EvidenceRef, ...]:
    return tuple(
        EvidenceRef(raw_path=f"$.logs[{i}]", text=f"line {i} " + "e" * width) for i in range(count)
    )


def invocation(count: int, width: int = 200) -> ToolInvocation:
    return ToolInvocation(
        source_invocation_id=7,
        tool_name="query_logs",
        input_params={},
        output={},
        duration_ms=1,
        success=True,
        retrieval_details=RetrievalDetails(
            evidence_status="supported", evidence_refs=refs(count, width)
        ),
    )


def test_a_call_shows_refs_in_order_within_its_cap_and_says_what_was_cut() -> None:
    b = budget()
    shown, truncated = shown_refs(refs(200), RefCap(tokens=1200), b)
    assert 3 <= len(shown) < 200
    assert [r["raw_path"] for r in shown] == [f"$.logs[{i}]" for i in range(len(shown))]
    assert truncated == {"refs_shown": len(shown), "refs_total": 200, "texts_cut": 0}
    assert shown_refs(refs(2), RefCap(tokens=1200), b)[1] is None
    # A single huge ref is still shown (cut to the text limit), so there is something to cite.
    [one], cut = shown_refs(refs(1, width=5000), RefCap(tokens=10), b)
    assert one["text"].startswith("line 0 ") and len(one["text"]) == RefCap(10).text_chars
    assert cut == {"refs_shown": 1, "refs_total": 1, "texts_cut": 1}


def test_tool_result_message_carries_ids_refs_and_the_truncation() -> None:
    b = budget()
    view = json.loads(tool_result(invocation(200), RefCap(tokens=600), b))
    assert view["source_invocation_id"] == 7 and view["tool_name"] == "query_logs"
    assert view["truncated"]["refs_total"] == 200
    assert len(view["evidence_refs"]) == view["truncated"]["refs_shown"]
    assert "success" not in view and "evidence_status" not in view  # supported: the refs show it
    refused = Refusal(tool_name="query_logs", params={}, reason="duplicate call")
    assert json.loads(tool_result(refused, RefCap(tokens=600), b))["refused"] is True


def test_calls_of_one_turn_share_the_round_cap() -> None:
    b = budget()
    view = ToolView(b)
    assert view.round_cap(1).tokens == b.tool_result_tokens
    assert view.round_cap(4).tokens == b.tool_round_tokens // 4
    calls = [
        ToolCall(id=f"c{i}", name="query_logs", arguments={}, raw_arguments="{}") for i in range(4)
    ]
    messages = view.answer([(call, invocation(200)) for call in calls])
    total = sum(b.tokens(m["content"]) for m in messages)
    assert total <= b.tool_round_tokens + 4 * 120, "each call within its share (plus ids)"


def test_trims_compact_the_oldest_tool_results_first() -> None:
    b = budget()
    view = ToolView(b)
    calls = [
        ToolCall(id=f"c{i}", name="query_logs", arguments={}, raw_arguments="{}") for i in range(3)
    ]
    messages: list[dict[str, object]] = [{"role": "system", "content": "s"}]
    for call in calls:
        messages += view.answer([(call, invocation(200))])
    trims = list(view.trims(messages))
    assert [t.label for t in trims][:3] == [
        f"tool result c{i} cut to its first refs" for i in range(3)
    ]
    first = trims[0].build()
    assert len(first[1]["content"]) < len(str(messages[1]["content"]))
    assert first[2]["content"] == messages[2]["content"], "newer results untouched"
    assert first[0] == messages[0], "the system prompt is never cut"


class _Model:
    name = "llama3.1:8b"

    def __init__(self) -> None:
        self.sent: list[list[dict[str, object]]] = []

    def complete(self, messages, *, tools=None, json_mode=False, schema=None):  # type: ignore[no-untyped-def]
        self.sent.append([dict(m) for m in messages])
        return ModelReply("{}", (), self.name, None, None, None, 1, "stop")


def test_recorder_sends_the_fitted_prompt_and_records_the_cut_in_the_step() -> None:
    model = _Model()
    recorder = StepRecorder(model, run_id="r", agent_name="a", service="s")
    assert recorder.budget == budget_for(model) and recorder.budget.family.name == "llama"
    big = [{"role": "system", "content": "x" * 40000}, {"role": "user", "content": "q"}]
    small = [{"role": "system", "content": "x" * 100}, {"role": "user", "content": "q"}]
    _reply, step = recorder.complete(big, trims=[Trim("system data shortened", lambda: small)])
    assert model.sent == [small]
    assert step.success and step.model_input.startswith("[budget ")
    assert "cut: system data shortened" in step.model_input
    with pytest.raises(PromptOverBudget):
        recorder.budget.fit(big)
    failed = StepRecorder(model, run_id="r", agent_name="a", service="s")
    with pytest.raises(Exception) as caught:
        failed.complete(big)
    assert getattr(caught.value, "kind", None) == "over_budget"
    [step] = failed.steps
    assert not step.success and "exceeds the budget" in (step.error_message or "")
    assert len(model.sent) == 1, "an over-budget prompt is never sent"
