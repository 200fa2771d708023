"""Budgets: what an agent version may spend per run and per UTC day, and a user per
UTC day, in cost and in tokens, enforced before each model call.

``guard`` is the run's ``agents_core.spend.SpendGuard``: it prices a call's worst case
(its prompt's estimated tokens at the input price plus the model's longest answer at
the output price, ``DEFAULT_MAX_OUTPUT_TOKENS`` when the model names none), refuses a
call that could pass a budget with a terminal ``budget_exceeded`` error, and settles
each call to its actual cost once it is over. Run budgets are counted in the run's
process; daily ones in the database (``days``: a ``DaySpend`` row per budget and day,
reserved with one conditional ``UPDATE``, so concurrent runs never overspend them, and
a ``DayHold`` per call in flight, which the run's end releases if the call never
settled: a dead process holds nothing back for the rest of the day); ``reads`` says
what a user may spend today and spent so far.

Cost budgets are in ``costs.DEFAULT_CURRENCY``: a call whose model is priced in
another currency, or has no price, is refused while a cost budget applies to it.
"""

from studio.budgets.guard import DEFAULT_MAX_OUTPUT_TOKENS, BudgetGuard, guard_for
from studio.budgets.reads import UserDay, user_day

__all__ = ["DEFAULT_MAX_OUTPUT_TOKENS", "BudgetGuard", "UserDay", "guard_for", "user_day"]
