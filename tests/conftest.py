"""Every test runs with the Khronos validation layer on (synchronization
validation included), and a test that makes Vulkan report an error fails."""
import os
import sys

# Before the runtime creates its Vulkan instance.
os.environ.setdefault("VKDELEGATE_VALIDATION", "1")
sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def no_vulkan_validation_errors(request):
    if "vkdelegate.runtime" not in sys.modules:
        yield
        return
    rt = sys.modules["vkdelegate.runtime"]
    before = rt.validation_error_count()
    yield
    errors = rt.validation_error_count() - before
    # Barrier placement: a test that provokes errors on purpose checks them itself.
    if request.node.get_closest_marker("provokes_validation_errors"):
        return
    assert errors == 0, f"{errors} Vulkan validation error(s) during this test; see stderr"


def pytest_configure(config):
    config.addinivalue_line("markers", "provokes_validation_errors: the test checks that Vulkan "
                            "validation reports errors it provokes (barrier placement)")


def pytest_report_header(config):
    try:
        import vkdelegate.runtime as rt
    except Exception as e:  # a broken build should show here, then fail the tests
        return f"vkdelegate runtime: not importable ({e})"
    if not rt.is_available():
        return f"vkdelegate runtime: no Vulkan device ({rt.unavailable_reason()})"
    info = rt.device_info()
    return (f"vkdelegate device: {info['name']} (Vulkan {info['api_version']}), "
            f"validation {'on' if rt.validation_enabled() else 'OFF'}")
