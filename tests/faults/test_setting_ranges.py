"""Every numeric setting has a valid range (issue 32: ``leaseMinutes = -5`` was accepted): a
value outside it, NaN or an infinity, from ``config.toml`` or a ``CW_*`` variable, is one
``invalid-input`` line naming the setting, the value, where it came from and the range."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwcore import config
from cwcore.errors import InvalidInput
from tests.faults.helpers import cw_env, run_cw

NUMERIC: dict[str, type] = {
    config.camel(f.name): type(f.default)
    for f in dataclasses.fields(config.Settings)
    if type(f.default) in (int, float)
}


def test_every_numeric_setting_has_a_range_holding_its_default() -> None:
    assert set(config.RANGES) == set(NUMERIC)
    defaults = config.Settings()
    for f in dataclasses.fields(defaults):
        public = config.camel(f.name)
        if public in NUMERIC:
            low, high = config.RANGES[public]
            assert low <= getattr(defaults, f.name) <= high, public


def _load_env(monkeypatch: pytest.MonkeyPatch, home: Path, name: str, raw: str) -> object:
    monkeypatch.setenv(config.env_name(name), raw)
    try:
        return dict((v.name, v.value) for v in config.load(home)[1])[name]
    finally:
        monkeypatch.delenv(config.env_name(name))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(NUMERIC)),
    value=st.one_of(
        st.integers(min_value=-(10**12), max_value=10**12),
        st.floats(allow_nan=True, allow_infinity=True),
    ),
)
def test_a_value_is_accepted_exactly_when_in_range(
    monkeypatch: pytest.MonkeyPatch, cw_home: Path, name: str, value: float
) -> None:
    low, high = config.RANGES[name]
    kind = NUMERIC[name]
    if kind is int and isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            with pytest.raises(InvalidInput, match=name):  # not an integer at all
                _load_env(monkeypatch, cw_home, name, repr(value))
            return
        value = int(value)
    raw = str(value)
    if math.isfinite(value) and low <= value <= high:
        assert _load_env(monkeypatch, cw_home, name, raw) == kind(value)
        return
    with pytest.raises(InvalidInput) as refused:
        _load_env(monkeypatch, cw_home, name, raw)
    message = refused.value.message
    assert "\n" not in message and name in message and config.env_name(name) in message
    assert "out of range" in message


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("leaseMinutes = -5", "setting leaseMinutes = -5 (from config.toml) is out of range: "
         "1 to 10,080"),
        ("windowOverlap = 1.0", "setting windowOverlap = 1 (from config.toml) is out of range: "
         "0 to 0.9"),
        ("segmentBytes = 0", "setting segmentBytes = 0 (from config.toml) is out of range: "
         "1,024 to 1,048,576"),
        ("daemonGraceSeconds = nan", "setting daemonGraceSeconds = nan (from config.toml) is "
         "out of range: 1 to 86,400"),
        ("rerankerCandidates = 2.5", "setting rerankerCandidates: cannot read 2.5 as int"),
    ],
)  # fmt: skip
def test_config_toml_out_of_range_is_one_line_invalid_input(
    cw_home: Path, line: str, shown: str
) -> None:
    cw_home.mkdir(parents=True, exist_ok=True)
    (cw_home / "config.toml").write_text(line + "\n", encoding="utf-8")
    result = run_cw("config", env=cw_env())
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"cw: {shown}\n")
    # Before any store is opened or daemon started: the same line from a store command.
    listed = run_cw("sessions", env=cw_env())
    assert (listed.returncode, listed.stderr) == (2, f"cw: {shown}\n")


def test_environment_out_of_range_under_json(cw_home: Path) -> None:
    result = run_cw("config", "--json", env=cw_env(CW_LEASE_MINUTES="-5"))
    assert result.returncode == 2
    assert result.stdout == (
        '{"error": {"code": "invalid-input", "message": "setting leaseMinutes = -5 (from '
        'CW_LEASE_MINUTES) is out of range: 1 to 10,080"}}\n'
    )
