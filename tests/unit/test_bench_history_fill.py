"""The history filler's copies: new ids throughout, the links between events kept."""

from __future__ import annotations

from bench.history_fill import RUN_TOPICS, _Recorded, _Renamer, _runs_needed
from tests.support.samples import sample
from tracebound import topics
from tracebound.events import PlanProduced, ToolInvoked


def test_a_copy_renames_every_id_and_keeps_the_links() -> None:
    tool = sample(ToolInvoked)
    numbered = tool.tool_invocation.model_copy(update={"source_invocation_id": 98_765_432_101})
    tool = tool.model_copy(update={"tool_invocation": numbered})
    plan = sample(PlanProduced).model_copy(update={"run_id": tool.run_id})
    tool = tool.model_copy(update={"causation_id": plan.event_id})
    ids = {tool.event_id, plan.event_id, tool.run_id}
    invocation = tool.tool_invocation.source_invocation_id
    names = _Renamer("copy-1", ids, {invocation})
    new_tool, new_plan = names.event(tool), names.event(plan)
    assert isinstance(new_tool, ToolInvoked)
    assert new_tool.run_id == new_plan.run_id != tool.run_id
    assert new_tool.causation_id == new_plan.event_id != plan.event_id
    assert new_tool.tool_invocation.source_invocation_id != invocation
    assert new_tool.tool_invocation.model_dump(exclude={"source_invocation_id"}) == (
        tool.tool_invocation.model_dump(exclude={"source_invocation_id"})
    )
    assert new_tool.tool_invocation.round == tool.tool_invocation.round
    again = _Renamer("copy-1", ids, {invocation}).event(tool)
    other = _Renamer("copy-2", ids, {invocation}).event(tool)
    assert again == new_tool and other.run_id not in (tool.run_id, new_tool.run_id)


def test_the_last_copy_takes_only_the_runs_it_needs() -> None:
    rec = _Recorded([], ["a", "b", "c"], {"a": 5, "b": 5, "c": 5}, set(), set())
    assert _runs_needed(rec, 7) == {"a", "b"}
    assert _runs_needed(rec, 100) == {"a", "b", "c"}


def test_dead_letters_are_not_copied() -> None:
    assert topics.topic_for("DeadLetter") not in RUN_TOPICS
    assert topics.topic_for("ToolInvoked") in RUN_TOPICS
