from __future__ import annotations

from collections.abc import Iterator

import pytest

from rig_nb.testing import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv
