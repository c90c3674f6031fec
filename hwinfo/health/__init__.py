"""Health verdicts of a snapshot (`hwinfo check`): rules that read only the model, like renderers.

- `findings.py`: Severity (with Nagios exit codes), Problem (what a rule saw), Finding.
- `rules_gpu.py`, `rules_host.py`: health rules, one function per rule.
- `drift.py`: what hardware changed since a saved baseline snapshot.
- `thresholds.py`: the thresholds file (`--config`), every key with a default.
- `evaluate.py`: runs every rule over a snapshot. `render.py`: text and JSON verdicts.
"""
