"""Closed-loop evaluation: tasks with checks, run under several context policies, compared in pairs.

``mtagent eval`` is built from these parts: :mod:`.tasks` (task files, SWE-bench lines),
:mod:`.policies` (named settings overlays), :mod:`.worker` (one session per unit, checks after
each task), :mod:`.runner` (interleaving, resume, executors), :mod:`.report` and :mod:`.stats`
(per-policy figures and paired comparisons), :mod:`.suite` (the built-in suite).
"""
