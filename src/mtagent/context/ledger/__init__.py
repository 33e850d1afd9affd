"""The hand-off ledger (DESIGN principle 12): work state the engine renders exactly, for free.

Public API:

* :class:`HandoffLedger` — goal (first user request, verbatim), requests (the last is the latest
  user request, verbatim), constraints, the plan (:class:`WorkPlan`), files read / created / edited
  / deleted, the last verification, failed commands with their error tail, the latest error line,
  rules in force, tools loaded, open subagent tasks;
* :func:`ledger_from_messages` — read it from messages (summary messages contribute the ledger
  they carry; the first goal always stands);
* :func:`render_ledger` — its hand-off sections; :func:`ledger_items` — what a view must carry;
  :func:`missing_from` — what a later view lost;
* the plan: :func:`validate_plan` (a model's ``update_plan`` call), :func:`plan_from_call`
  (mtagent's and recorded agents' plan tools), :func:`current_plan` (the engine's plan now).
"""

from mtagent.context.ledger.extract import ledger_from_messages, stored_ledger
from mtagent.context.ledger.model import FailedCommand, HandoffLedger, ledger_from_dict, merge_ledgers
from mtagent.context.ledger.render import LEDGER_HEADINGS, ledger_items, missing_from, parse_rendered, render_ledger
from mtagent.context.ledger.workplan import (
    PLAN_TOOL,
    STATUSES,
    PlanError,
    PlanStep,
    WorkPlan,
    collapse_plan_calls,
    is_plan_call,
    plan_from_call,
    validate_plan,
)
from mtagent.context.ledger.current import current_plan, plan_from_records, plan_from_transcript

__all__ = [
    "LEDGER_HEADINGS", "PLAN_TOOL", "STATUSES", "FailedCommand", "HandoffLedger", "PlanError", "PlanStep", "WorkPlan",
    "collapse_plan_calls", "current_plan", "is_plan_call", "ledger_from_dict", "ledger_from_messages", "ledger_items", "merge_ledgers",
    "missing_from", "parse_rendered", "plan_from_call", "plan_from_records", "plan_from_transcript", "render_ledger", "stored_ledger", "validate_plan",
]
