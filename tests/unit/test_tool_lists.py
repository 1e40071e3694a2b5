"""Every place that lists the evidence tools by hand names the same tools.

A tool added to the executor but missing from one of these lists fails quietly
elsewhere: the gatekeeper rejects every citation of it, a skill cannot plan it,
rules mode reads its items as log lines, or a planner prompt never offers it.
"""

from __future__ import annotations

import json
import re
import typing

from services.executor.claim_templates import templates
from services.executor.claims import _ARRAYS
from services.executor.tools import PARAMS_MODELS
from services.planner.skills import ToolName
from tracebound import resources
from tracebound.prompts import load_prompt


def _rules(name: str) -> dict[str, typing.Any]:
    data: dict[str, typing.Any] = json.loads(resources.path("rules", name).read_text("utf-8"))
    return data


def test_the_hand_kept_tool_lists_agree() -> None:
    tools = set(PARAMS_MODELS)
    gatekeeper = _rules("gatekeeper-rules.json")["evidence_contract"]["tool_arrays"]
    assert set(typing.get_args(ToolName)) == tools
    assert set(gatekeeper) == tools
    assert set(_ARRAYS) == tools
    # the gatekeeper allows each tool's item array (first) and any other it cites
    firsts = {t: a if isinstance(a, str) else a[0] for t, a in gatekeeper.items()}
    assert firsts == {t: _ARRAYS[t] for t in tools}
    assert set(templates()["kinds"]) == tools
    assert set(_rules("verifier-rules.json")["aiops"]["evidence_tools"]) == tools


def test_the_planner_prompts_offer_every_tool() -> None:
    for name in ("aiops_planner", "chat_planner"):
        offered = set(re.findall(r"`(query_\w+|lookup_\w+)`", load_prompt(name).template.template))
        assert offered == set(PARAMS_MODELS), name
