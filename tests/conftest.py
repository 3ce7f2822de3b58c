"""Shared test fixtures: the backends every execution-tier test runs on."""
import pytest

BACKENDS = ["reference", "numba"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each backend name in turn; tests launch with kernel.with_options(backend=backend)."""
    return request.param
