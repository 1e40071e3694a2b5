"""A skill catalogue edited after runs were recorded: every skill now plans one other call."""

from __future__ import annotations

from services.planner.skills import Skill, SkillStep

EDITED_STEP = SkillStep(tool="lookup_knowledge", params={"query": "edited step"}, purpose="edited")


def edited_skills(skills: tuple[Skill, ...]) -> tuple[Skill, ...]:
    """The same catalogue after every skill file was edited to plan only ``EDITED_STEP``."""
    return tuple(
        s.model_copy(update={"version": f"{s.version}-edited", "steps": (EDITED_STEP,)})
        for s in skills
    )
