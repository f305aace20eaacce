# Session s-alpha-1

- project: alpha
- agent: claude-code
- started: 2026-11-18T09:30:00.000Z
- messages: 7, turns: 2

## User — 2026-11-18T09:30:00.000Z

How do I parse `--since` dates?

## Assistant — 2026-11-18T09:30:05.000Z

Use **parse_time**:

```python
from cwcore.clock import parse_time
print(parse_time('2026-11-01'))
```

## Tool call `Bash` — 2026-11-18T09:30:10.000Z

```
{"command": "pytest -q tests"}
```

## Tool result `Bash` — 2026-11-18T09:30:40.000Z

```
tests/test_case_01.py::test_01 PASSED
tests/test_case_02.py::test_02 PASSED
tests/test_case_03.py::test_03 PASSED
tests/test_case_04.py::test_04 PASSED
tests/test_case_05.py::test_05 PASSED
tests/test_case_06.py::test_06 PASSED
tests/test_case_07.py::test_07 PASSED
tests/test_case_08.py::test_08 PASSED
tests/test_case_09.py::test_09 PASSED
tests/test_case_10.py::test_10 PASSED
tests/test_case_11.py::test_11 PASSED
tests/test_case_12.py::test_12 PASSED
tests/test_case_13.py::test_13 PASSED
tests/test_case_14.py::test_14 PASSED
tests/test_case_15.py::test_15 PASSED
tests/test_case_16.py::test_16 PASSED
tests/test_case_17.py::test_17 PASSED
tests/test_case_18.py::test_18 PASSED
tests/test_case_19.py::test_19 PASSED
tests/test_case_20.py::test_20 PASSED
tests/test_case_21.py::test_21 PASSED
tests/test_case_22.py::test_22 PASSED
tests/test_case_23.py::test_23 PASSED
tests/test_case_24.py::test_24 PASSED
tests/test_case_25.py::test_25 PASSED
tests/test_case_26.py::test_26 PASSED
tests/test_case_27.py::test_27 PASSED
tests/test_case_28.py::test_28 PASSED
tests/test_case_29.py::test_29 PASSED
tests/test_case_30.py::test_30 PASSED
```

## Assistant — 2026-11-18T09:31:00.000Z

All 30 tests pass.

## User — 2026-11-18T09:32:00.000Z

Thanks! Now export the session.

## Assistant — 2026-11-18T09:32:30.000Z

Use `cw export s-alpha-1`.
