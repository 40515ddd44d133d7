"""The shared seed-fidelity checks live outside test modules; let pytest explain their failures."""

import pytest

pytest.register_assert_rewrite("tests.sandbox.demo.fidelity_checks")
