"""Issue 23: every tool was looked at for keep-alive off and TLS. Each adapter declares keepalive_off and
tls as True (command() honours it, checked on a real run: tools/<id>/README.md) or as the one-line reason
the tool cannot, which list-tools prints and an `unsupported` row keeps."""
import pytest

from harness.tools.adapter import ToolAdapter
from harness.tools.registry import discover

ADAPTERS = discover()
NOT_LOOKED_AT = ToolAdapter.keepalive_off


@pytest.mark.parametrize("name", sorted(ADAPTERS))
@pytest.mark.parametrize("capability", ["keepalive_off", "tls"])
def test_every_adapter_declares_keepalive_off_and_tls(name: str, capability: str):
    value = getattr(ADAPTERS[name], capability)
    assert value is True or (isinstance(value, str) and value.strip() and value != NOT_LOOKED_AT), \
        f"{name}.{capability} = {value!r}: set True once command() honours it, else the reason it cannot"
