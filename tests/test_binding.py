"""hwinfo/binding.py: which binding is imported, and when it is too old to use."""

from __future__ import annotations

import pytest

from hwinfo import binding


def test_the_installed_binding_is_new_enough() -> None:
    assert binding.too_old() is None
    assert binding.distribution()[0] == "nvidia-ml-py"


@pytest.mark.parametrize("lacks", ["convertStrBytes", "nvmlDeviceGetUUID"])
def test_a_binding_without_str_names_or_a_core_call_is_too_old(
        monkeypatch: pytest.MonkeyPatch, lacks: str) -> None:
    monkeypatch.delattr(binding.pynvml, lacks)
    name, version = binding.distribution()
    assert binding.too_old() == (f"pynvml binding {version} ({name}) is older than hwinfo "
                                 "supports: pip install -U nvidia-ml-py")


def test_a_missing_wrapper_reads_as_function_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(binding.pynvml, "nvmlDeviceGetNumGpuCores")
    with pytest.raises(binding.pynvml.NVMLError_FunctionNotFound):
        binding.function("nvmlDeviceGetNumGpuCores")(None)
