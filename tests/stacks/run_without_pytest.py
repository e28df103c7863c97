"""Runs a pytest-style test file where pytest is not installed (the GPU machine has no
network to install it): test functions, and test classes' methods, with a stand-in for the
few pytest names the file uses. Prints PASS/FAIL per test; exits 1 on any failure.

usage: run_without_pytest.py TEST_FILE
"""
import importlib.util
import sys
import traceback
import types

try:
    import pytest  # noqa: F401
except ImportError:
    stub = types.ModuleType("pytest")

    class _Mark:
        def __getattr__(self, name):
            return lambda *a, **k: (lambda f: f)

    stub.mark = _Mark()
    sys.modules["pytest"] = stub

spec = importlib.util.spec_from_file_location("under_test", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
# The file's own file name, as pytest would import it (frames name it).
failed = 0
tests = []
for name, obj in vars(module).items():
    if name.startswith("test_") and callable(obj):
        tests.append((name, obj))
    elif name.startswith("Test") and isinstance(obj, type):
        for m in dir(obj):
            if m.startswith("test_"):
                tests.append((f"{name}.{m}", getattr(obj(), m)))
for name, fn in tests:
    try:
        fn()
        print("PASS", name)
    except Exception:  # noqa: BLE001 - report every failure
        failed += 1
        print("FAIL", name)
        traceback.print_exc()
print(f"{len(tests) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
