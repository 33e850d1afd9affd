"""The ``update_plan`` tool: the model writes its plan, and the engine keeps it.

The plan's latest state is engine state (:mod:`mtagent.context.ledger.workplan`): the newest
successful call is the plan, shown in every hand-off after a compaction of any kind, in ``/context``,
``mtagent sessions show`` and ``--json``. The tool itself stores nothing — the call's arguments are
the plan, so the transcript is the one record of it — and answers with one short line (the plan is
in the call; echoing it back would put it in the view twice).

The arguments are a model's, a hostile input: :func:`~mtagent.context.ledger.validate_plan` bounds
the steps' number and size and their statuses and refuses control characters; a refused call is a
tool error (``status="error"``), so it never becomes the plan.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, ValidationError

from mtagent.context.ledger import PLAN_TOOL, STATUSES, PlanError, validate_plan
from mtagent.context.ledger.workplan import MAX_NOTE_CHARS, MAX_STEP_CHARS, MAX_STEPS

UPDATE_PLAN_DESCRIPTION = (
    "Write your plan for a multi-step task: the whole list of steps, each pending, in_progress or done "
    "(one in_progress at a time), plus an optional note. Call it when you make the plan and again "
    "whenever a step's status changes; send every step each time. The plan is kept for you through "
    "every context compaction, so you never redo finished steps. Skip it for one-step tasks."
)
class PlanStepArg(BaseModel):
    step: str = Field(description=f"One line, at most {MAX_STEP_CHARS} characters.")
    status: Literal["pending", "in_progress", "done"] = Field(description="pending, in_progress or done.")


class UpdatePlanArgs(BaseModel):
    # Typed so every schema mode (the compact one too) shows the step's shape; validate_plan still
    # checks sizes and characters, and a call the schema refuses is the same one-line tool error.
    steps: list[PlanStepArg] = Field(description=f"Every step of the plan, in order (at most {MAX_STEPS}).")
    note: str | None = Field(None, description=f"Optional: why the plan is what it is (at most {MAX_NOTE_CHARS} "
                             "characters).")


def _refused(error: ValidationError) -> str:
    """A call the argument schema refuses, as the model reads it: one line of what is wrong."""
    where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()[:3])
    return f"Error: {where} (steps are {{step, status}} objects, status one of {', '.join(STATUSES)}). " \
           "The plan was not changed."


def update_plan(steps: list[PlanStepArg], note: str | None = None) -> str:
    """Validate the plan and say where it stands; the call's arguments are the plan."""
    try:
        plan = validate_plan([s.model_dump() for s in steps], note)
    except PlanError as exc:
        raise ToolException(f"Error: {exc}. The plan was not changed.") from exc
    return f"Plan updated: {plan.summary_line()}."


def build_update_plan_tool() -> BaseTool:
    return StructuredTool.from_function(func=update_plan, name=PLAN_TOOL, description=UPDATE_PLAN_DESCRIPTION,
                                        args_schema=UpdatePlanArgs, handle_tool_error=True,
                                        handle_validation_error=_refused)
